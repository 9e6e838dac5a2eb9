-- The upgrade guard: idempotent adds on a server with native IDMP to a
-- stream that may still hold emulated IDMP state (written by idmpctl's
-- emulation before the server was upgraded, or with --mode emulated).
-- Until that state is migrated (idmpctl migrate) or has expired, an iid it
-- knows must not be added again: per item, the emulated state is looked up
-- first, by the emulation's own rules (within the stream's DURATION on the
-- server clock; a state that belongs to a deleted stream or to another
-- name counts for nothing, R13), and a live iid is answered with its
-- original entry ID as a duplicate. Every other item is a native XADD
-- IDMP/IDMPAUTO, which Redis dedupes against its own tracking. A stream
-- without emulated state costs one EXISTS more than a plain XADD.
--
-- Arguments (guardArgs in guard.go): stream, meta hash, pids set
-- (stream_common.lua); then KEYS[PID_KEYS + j - 1]: the ids hash of pid
-- j. Ids prefix, order prefix, stream name (common). NOMK ('1'|''),
-- DELETION (''|KEEPREF|DELREF|ACKED), TRIM (''|MAXLEN|MINID), TRIM_OP
-- '='|'~', THRESHOLD, LIMIT (''|n).
-- NPIDS, then from ARGV[ITEMS] the pids; then nitems; then per item: pid index,
-- '1' for IDMPAUTO ('' for IDMP), the iid (for IDMPAUTO: the emulation's
-- content hash of the fields, stream.AutoIID, which is what the emulated
-- state holds), nfields, fields...; last, the server's native defaults
-- (CONFIG GET stream-idmp-duration, -maxsize; '' '' not known yet).
-- Reply: {done, stop, message, consulted}: done, stop and message as the
-- emulated add script's (an item's new ID, or 'd', 0|1 and the original's
-- ID); consulted is '1' when live emulated state was consulted.
-- Counters: a duplicate that the emulated state answers counts in its
-- iids-duplicates (the native counters never saw the add); a native add
-- or duplicate counts in the native iids-added or iids-duplicates, as
-- Redis counts it.

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

local argv = ARGV
local function malformed()
  return redis.error_reply('ERR idmpctl: malformed guarded XADD call (' .. #KEYS .. ' keys, ' .. #argv .. ' arguments)')
end
local npids = tonumber(NPIDS)
if not npids or npids < 1 or #KEYS ~= PID_KEYS - 1 + npids then return malformed() end
local nitems = tonumber(argv[ITEMS + npids])
if not nitems or nitems < 1 then return malformed() end
local nargv = ITEMS_LAST
local items = {}
local a = ITEMS + npids + 1
for i = 1, nitems do
  local j, auto, iid, nf = tonumber(argv[a]), argv[a + 1] == '1', argv[a + 2], tonumber(argv[a + 3] or '')
  if not j or not nf or not iid or j < 1 or j > npids or nf < 2 or nf % 2 ~= 0 or a + 3 + nf > nargv then
    return malformed()
  end
  if nf > MAX_FIELD_ARGS then return { 'F', tostring(i), tostring(nf) } end
  if argv[ITEMS + j - 1] == '' then return redis.error_reply('ERR IDMP requires a non-empty producer ID') end
  if iid == '' then return redis.error_reply('ERR IDMP requires a non-empty idempotent ID') end
  items[i] = { j = j, auto = auto, iid = iid, f0 = a + 4, nf = nf }
  a = a + 4 + nf
end
if a - 1 ~= nargv then return malformed() end

local t = key_type(STREAM)
if t ~= 'none' and t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local exists = t == 'stream'

-- The emulated state, when there is any of this stream's: its keys of the
-- types the emulation writes (another type is not its state: refused, as
-- the emulation refuses it), its owner this stream, and the stream the
-- one it was written for (not deleted and created again since, R13).
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
for j = 1, npids do
  if err then break end
  err = bad_type(KEYS[PID_KEYS + j - 1], 'hash')
end
if err then return err end
local m, live = nil, false
local info = exists and xinfo() or nil
if exists and (redis.call('EXISTS', META) == 1 or redis.call('EXISTS', PIDS) == 1) then
  m = load_meta()
  live = not (m.owner and m.owner ~= OWNER) and not stale(info, m)
end

local nomk = NOMK == '1'
-- XADD's options before IDMP, the same for every item.
local head = xadd_head(DELETION)

local checks = { { 'XRANGE', STREAM, '-', '+' } }
for j = 1, npids do
  local xa = { 'XADD' }
  for i = 1, #head do xa[i + 1] = head[i] end
  xa[#xa + 1], xa[#xa + 2], xa[#xa + 3], xa[#xa + 4], xa[#xa + 5], xa[#xa + 6] = 'IDMP', argv[ITEMS + j - 1], 'i', '*', 'f', 'v'
  checks[#checks + 1] = xa
end
err = denied(checks)
if err then return err end
-- Counting what the emulated state answered, and carrying its settings
-- over, are not worth a refusal: a user who may not is spared them.
local may_count = live and m.owner ~= nil and not denied({ { 'HINCRBY', META, 'iids-duplicates', '1' } })

-- Which items the emulated state knows: their original IDs, while live.
local now = now_ms()
local known = {}
if live then
  local dur_ms = m.duration * 1000
  for i, it in ipairs(items) do
    local orig = redis.call('HGET', KEYS[PID_KEYS + it.j - 1], it.iid)
    if orig and id_ms(orig) + dur_ms > now then known[i] = orig end
  end
end

-- The stream's settings come over with its state at the first native add,
-- while the native tracking is empty (XCFGSET clears what it tracks, so
-- later it would lose iids: idmpctl migrate says what to do then), and
-- only over the server's defaults (the last two arguments, CONFIG GET
-- stream-idmp-*), never narrowing them (carried_settings). {'C'}: the
-- caller did not send the defaults.
local cfg
if live and m.owner and info and (tonumber(info['idmp-duration']) ~= m.duration or tonumber(info['idmp-maxsize']) ~= m.maxsize)
  and info['iids-tracked'] == 0 and info['pids-tracked'] == 0
  and m.duration >= 1 and m.duration <= MAX_DURATION and m.maxsize >= 1 and m.maxsize <= MAX_MAXSIZE
  and not denied({ { 'XCFGSET', STREAM, 'IDMP-DURATION', '1' } }) then
  if not DEFAULTS_KNOWN then return { 'C' } end
  local d, n = carried_settings(tonumber(info['idmp-duration']), tonumber(info['idmp-maxsize']), m)
  if d then cfg = { 'XCFGSET', STREAM, 'IDMP-DURATION', d, 'IDMP-MAXSIZE', n } end
end

------------------------------------------------------------------------
-- Part 2: the writes. Each native add is an XADD under pcall: one that
-- fails (OOM or READONLY at the first write, an exhausted ID space) stops
-- the run, and the items before it stand, as the emulated script does.
------------------------------------------------------------------------

local done, stop, message = {}, '', ''
local ndups = 0
-- A new entry's ID becomes the stream's last-generated-id; a duplicate's,
-- the original's, leaves it as it was. Comparing the ID with the last ID
-- before the add is not enough: XSETID may have set the last ID back
-- below a tracked original, whose ID is then above it.
local last = info and info['last-generated-id'] or '0-0'
if cfg and exists then
  local r = redis.pcall(unpack(cfg))
  if type(r) == 'table' and r.err then return { '', 'e', r.err, live and '1' or '' } end
end
for i, it in ipairs(items) do
  local orig = known[i]
  if orig then
    ndups = ndups + 1
    local still = #redis.call('XRANGE', STREAM, orig, orig) > 0 and '1' or '0'
    done[#done + 1] = 'd' .. still .. orig
  elseif not exists and nomk then
    stop = 'n'
    break
  else
    local args = { 'XADD' }
    for k = 1, #head do args[k + 1] = head[k] end
    if it.auto then
      args[#args + 1], args[#args + 2] = 'IDMPAUTO', argv[ITEMS + it.j - 1]
    else
      args[#args + 1], args[#args + 2], args[#args + 3] = 'IDMP', argv[ITEMS + it.j - 1], it.iid
    end
    args[#args + 1] = '*'
    local n = #args
    for f = 0, it.nf - 1 do args[n + 1 + f] = argv[it.f0 + f] end
    local id = redis.pcall(unpack(args))
    if type(id) ~= 'string' then
      if id then stop, message = 'e', id.err else stop = 'n' end
      break
    end
    exists = true
    if id ~= last and xinfo()['last-generated-id'] == id then
      last = id
      done[#done + 1] = id
    else
      local still = #redis.call('XRANGE', STREAM, id, id) > 0 and '1' or '0'
      done[#done + 1] = 'd' .. still .. id
    end
  end
end
if ndups > 0 and may_count then redis.call('HINCRBY', META, 'iids-duplicates', ndups) end
return { table.concat(done, ','), stop, message, live and '1' or '' }
