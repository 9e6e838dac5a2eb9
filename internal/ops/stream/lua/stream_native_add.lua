-- Native IDMP (Redis 8.6+): one run of idempotent adds to one stream (an
-- xadd, an exec run of XADD ... IDMP lines, a chunk of xadd --batch), in
-- one script call: the server's own tracking dedupes; the script tells each
-- add's outcome, and a batch chunk moves its progress record
-- compare-and-set in the same atomic step.
--
-- The upgrade guard (docs/upgrade.md) is part of it: a stream that still
-- holds live emulated IDMP state (written before the server was upgraded,
-- or with --mode emulated) answers an iid that state knows with its
-- original entry ID, as a duplicate, and adds every other item natively.
-- A stream without such state costs one EXISTS of its two state keys.
--
-- Arguments (nativeAddArgs in native.go): STREAM, META, PIDS (the stream
-- and its emulated state's meta hash and pids set, only read) and
-- IDS_PREFIX, ORDER_PREFIX, OWNER as stream_common.lua takes them; then
-- KEYS[PID_KEYS + j - 1]: pid j's emulated ids hash (only read), and for a
-- batch chunk its PROGRESS record and the stream's BATCHES index last.
-- The chunk's progress (FROM '' for a call that is no chunk): FROM lines
-- done before it, TO after it, the DIGEST of those lines, DROP the lines
-- done before the chunk whose kept replies go now ('' none), PROGRESS_TTL
-- how long the record outlives this chunk in ms, the BATCH_ID, its
-- BATCH_PID, each item's input LINES (joined by commas: read only when an
-- item stops the chunk), and the RUN that sends it.
-- NOSTATE '1': no state key can share the stream's cluster slot, so it has
-- none (META and PIDS are the stream itself). NOMK ('1'|''), DELETION
-- (''|KEEPREF|DELREF|ACKED), TRIM ('MAXLEN'|'MINID'|''), TRIM_OP '='|'~',
-- THRESHOLD, LIMIT (''|n), for every item; AUTO '1' for IDMPAUTO (XADD
-- gets the fields; each item's iid is the emulation's content hash of
-- them, by which emulated state knows it); OUTCOMES '1' to tell new adds
-- from duplicates (exec needs only the IDs).
-- NPIDS, then from ARGV[ITEMS] the pids; then nitems; then the items'
-- shape, three arguments: when every item is of the one pid and has the
-- same number of field/value arguments, that number, and '1' when every
-- item has the same field names too (they then come once, and each item
-- carries its values only), else ''; and '1' when the items come packed,
-- else ''. Then, for shared names, the names. Then the items: packed (one
-- pid, and every string shorter than 255 bytes), two arguments: every
-- item's strings (iid, values... or fields...) one after the other, and
-- their lengths, a byte each (an argument costs the server more than the
-- string.sub that cuts it out of one); else per item: iid, values...
-- (shared names), iid, fields... (one pid), or pid index, iid, nfields,
-- fields. Last, the server's native defaults (CONFIG GET stream-idmp-*;
-- '' '' not known), which the guard's settings carry-over needs.
--
-- Reply: {done, stop, message[, 'u']}: done is the items written,
-- comma-separated, each its new ID, or 'd', 0|1 (the original entry still
-- exists) and the original's ID (without OUTCOMES every XADD reply is
-- given as an ID); stop is '' when every item was done, else why the next
-- one stopped the run: 'n' no stream (NOMKSTREAM), 'e' an error (message).
-- Items before a stop stay written. 'u': the server's counters do not
-- agree with the outcomes told (see part 2): the adds stand, their
-- outcomes are not known.
-- DRY '1': nothing is added; the reply is {'K'} where the adds would be
-- tried (Streams.CheckAdd), else the refusal they would get.
-- Refusals, with nothing written: {'P', lines} the progress record stands
-- at another line count; {'C'} the guard would carry the emulated settings
-- over and needs the server's native defaults; {'F', item, nfields} an
-- item has more field/value arguments than one XADD from Lua can take
-- (MAX_FIELD_ARGS); and the errors of part 1.
--
-- Telling a duplicate: Redis replies the same ID for a new entry and a
-- duplicate. The stream's entries-added and iids-duplicates, read before
-- and after the adds, say how many of each the run made: when it made no
-- duplicate every add is new, and no reply needs a look. Otherwise each
-- reply is looked at: inside a script the server's clock stands still, so
-- the ID a new add gets is known before it is made, the next after the
-- stream's last-generated-id at that snapshot; an add that replies exactly
-- that ID made it, any other reply is the original of a duplicate (whose
-- ID is at most the last-generated-id: after DEL the stream and its
-- tracking are gone, XTRIM and XDEL keep the last ID, an explicit ID moves
-- it up, and XSETID cannot set it below an entry or a deleted one's ID).
-- The counters must agree with the outcomes so told: they do not when the
-- stream's last ID was set back with XSETID below the ID of a trimmed
-- entry whose iid is still tracked, so that a duplicate replies the very ID
-- * generates next; then the reply says 'u'.

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

local argv = ARGV
local function malformed()
  return redis.error_reply('ERR idmpctl: malformed native XADD call (' .. #KEYS .. ' keys, ' .. #argv .. ' arguments)')
end
local chunk = FROM ~= ''
local npids = tonumber(NPIDS)
if not npids or npids < 1 or #KEYS ~= PID_KEYS - 1 + npids + (chunk and 2 or 0)
  or chunk and (not tonumber(FROM) or not tonumber(PROGRESS_TTL)) then
  return malformed()
end
local PROGRESS, BATCHES = KEYS[PID_KEYS + npids], KEYS[PID_KEYS + npids + 1]
local nitems, uniform = tonumber(argv[ITEMS + npids]), tonumber(argv[ITEMS + npids + 1])
local named = uniform and argv[ITEMS + npids + 2] == '1'
local packed = uniform and argv[ITEMS + npids + 3] == '1'
local first = ITEMS + npids + 4 -- the first item, or the names
local names = {} -- the field names every item has, when named
if named then
  if uniform % 2 ~= 0 then return malformed() end
  for k = 1, uniform / 2 do names[k] = argv[first + k - 1] end
  first = first + uniform / 2
end
local auto = AUTO == '1'
-- The arguments of an item's fields: its values alone when named.
local nvals = uniform and (named and uniform / 2 or uniform)
if not nitems or nitems < 1 then return malformed() end
for j = 1, npids do
  if argv[ITEMS + j - 1] == '' then
    return redis.error_reply(auto and 'ERR IDMPAUTO requires a non-empty producer ID' or 'ERR IDMP requires a non-empty producer ID')
  end
end
-- Every item: a known pid, a non-empty iid, and no more field/value
-- arguments than one XADD from Lua takes (unpack stops near 8,000 values).
local nargv = ITEMS_LAST
local sub, byte = string.sub, string.byte
local a = first
if packed then
  -- The strings and their lengths: as many as the items have, adding up
  -- to the strings' bytes.
  local big, lens = argv[first], argv[first + 1]
  local m = 1 + nvals -- strings an item
  if nargv ~= first + 1 or not lens or #lens ~= nitems * m or uniform < 2 or uniform % 2 ~= 0 then return malformed() end
  if uniform > MAX_FIELD_ARGS then return { 'F', '1', tostring(uniform) } end
  local total = 0
  for k = 1, #lens, 4000 do
    local l = { byte(lens, k, math.min(k + 3999, #lens)) }
    for j = 1, #l do
      local n = l[j]
      if n == 255 then return malformed() end
      if n == 0 and (k + j - 2) % m == 0 then
        return redis.error_reply('ERR IDMP requires a non-empty idempotent ID')
      end
      total = total + n
    end
  end
  if total ~= #big then return malformed() end
  a = nargv + 1
end
for i = 1, packed and 0 or nitems do
  local j, nf, iid
  if uniform then
    j, nf, iid = 1, uniform, argv[a]
    a = a + 1 + nvals
  else
    j, iid, nf = tonumber(argv[a]), argv[a + 1], tonumber(argv[a + 2] or '')
    if not j or not nf then return malformed() end
    a = a + 3 + nf
  end
  if j < 1 or j > npids or nf < 2 or nf % 2 ~= 0 or a - 1 > nargv then return malformed() end
  if nf > MAX_FIELD_ARGS then return { 'F', tostring(i), tostring(nf) } end
  if iid == '' then return redis.error_reply('ERR IDMP requires a non-empty idempotent ID') end
end
if a - 1 ~= nargv then return malformed() end
if DRY == '1' then
  -- The guard reads the pids' emulated ids hashes.
  local reads = {}
  for j = 1, npids do
    local ids = KEYS[PID_KEYS + j - 1]
    reads[#reads + 1], reads[#reads + 2] = { 'TYPE', ids }, { 'HGET', ids, 'i' }
  end
  local err = denied_reads('an idempotent XADD', reads)
  if err then return err end
end

local t = key_type(STREAM)
if t ~= 'none' and t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local exists = t == 'stream'
if chunk then
  for _, kt in ipairs({ { PROGRESS, 'hash' }, { BATCHES, 'zset' } }) do
    local have = key_type(kt[1])
    if have ~= 'none' and have ~= kt[2] then
      return redis.error_reply('WRONGTYPE ' .. kt[1] .. ' holds a ' .. have .. ', not the ' .. kt[2] ..
        ' of a batch\'s progress: nothing was written')
    end
  end
end

-- XADD's arguments before the pid, the same for every item.
local head = xadd_head(DELETION)
head[#head + 1] = auto and 'IDMPAUTO' or 'IDMP'
local nhead = #head

-- The commands part 2 runs, for the permission checks.
local xa = { 'XADD' }
for i = 1, nhead do xa[i + 1] = head[i] end
xa[#xa + 1] = argv[ITEMS]
if not auto then xa[#xa + 1] = 'i' end
xa[#xa + 1], xa[#xa + 2], xa[#xa + 3] = '*', 'f', 'v'
local checks = { xa, { 'XRANGE', STREAM, '-', '+' }, { 'XINFO', 'STREAM', STREAM } }
if chunk then
  for _, c in ipairs({ { 'HSET', PROGRESS, 'f', 'v' }, { 'HDEL', PROGRESS, 'f' }, { 'PERSIST', PROGRESS },
    { 'ZADD', BATCHES, '0', 'm' }, { 'PERSIST', BATCHES } }) do checks[#checks + 1] = c end
end
local err = denied(checks, chunk and 'xadd --batch' or 'an idempotent XADD')
if err then return err end
-- The items, one at a time and in order (next_item): pid, iid and the
-- XADD arguments after the ID, for the loops that are not the common
-- batch's.
local pos, k = 1, 1 -- packed: the next string's place, and its length's
local function cut()
  local e = pos + byte(argv[first + 1], k)
  local v = sub(argv[first], pos, e - 1)
  pos, k = e, k + 1
  return v
end
local function next_item()
  local pid, fields = argv[ITEMS], {}
  local iid
  if packed then
    iid = cut()
    for v = 1, nvals do
      if named then fields[2 * v - 1], fields[2 * v] = names[v], cut() else fields[v] = cut() end
    end
    return pid, iid, fields
  end
  local nf = uniform
  if not uniform then
    pid, iid, nf = argv[ITEMS + tonumber(argv[a]) - 1], argv[a + 1], tonumber(argv[a + 2])
    a = a + 3
  else
    iid, a = argv[a], a + 1
  end
  for v = 1, named and nvals or nf do
    if named then fields[2 * v - 1], fields[2 * v] = names[v], argv[a + v - 1] else fields[v] = argv[a + v - 1] end
  end
  a = a + (named and nvals or nf)
  return pid, iid, fields
end

-- Emulated state of the stream: its keys of the types the emulation
-- writes, its owner this stream, and the stream the one it was written
-- for (not deleted and created again since, R13). Live, it is consulted.
local outcomes = OUTCOMES == '1' or chunk
local info = exists and outcomes and xinfo() or nil
local m, live = nil, false
if NOSTATE ~= '1' and redis.call('EXISTS', META, PIDS) > 0 then
  info = info or exists and xinfo() or nil
  local berr = bad_type(META, 'hash') or bad_type(PIDS, 'set')
  for j = 1, npids do
    berr = berr or bad_type(KEYS[PID_KEYS + j - 1], 'hash')
  end
  if berr then return berr end
  m = load_meta()
  live = exists and not (m.owner and m.owner ~= OWNER) and not stale(info, m)
end

-- The record moves from FROM lines to TO, compare-and-set: a chunk
-- that was committed already (its reply lost, or its connection stalled and
-- given up), or one of another run, finds it moved on.
if chunk then
  local line = redis.call('HGET', PROGRESS, 'line') or '0'
  if line ~= FROM then return { 'P', line } end
end
if not exists and NOMK == '1' then return { '', 'n', '' } end

-- Counting what the emulated state answered, and carrying its settings
-- over, are not worth a refusal: a user who may not is spared them.
local may_count = live and m.owner ~= nil and not denied({ { 'HINCRBY', META, 'iids-duplicates', '1' } })

-- Which items the emulated state knows: their original IDs, while live
-- (within the state's DURATION on the server clock).
local now = now_ms()
local known, nknown = {}, 0
if live then
  local dur_ms = m.duration * 1000
  a = first
  for i = 1, nitems do
    local pid, iid = next_item()
    local j = 1
    while argv[ITEMS + j - 1] ~= pid do j = j + 1 end
    local orig = redis.call('HGET', KEYS[PID_KEYS + j - 1], iid)
    if orig and id_ms(orig) + dur_ms > now then known[i], nknown = orig, nknown + 1 end
  end
  pos, k, a = 1, 1, first
end

-- The stream's settings come over with its state at the first native add,
-- while the native tracking is empty (XCFGSET clears what it tracks, so
-- later it would lose iids: idmpctl migrate says what to do then), and
-- only over the server's defaults (the last two arguments, CONFIG GET
-- stream-idmp-*), never narrowing them (carried_settings). {'C'}: the
-- caller did not send the defaults.
local cfg
if live and m.owner and (tonumber(info['idmp-duration']) ~= m.duration or tonumber(info['idmp-maxsize']) ~= m.maxsize)
  and info['iids-tracked'] == 0 and info['pids-tracked'] == 0
  and m.duration >= 1 and m.duration <= MAX_DURATION and m.maxsize >= 1 and m.maxsize <= MAX_MAXSIZE
  and not denied({ { 'XCFGSET', STREAM, 'IDMP-DURATION', '1' } }) then
  if not DEFAULTS_KNOWN then return { 'C' } end
  local d, n = carried_settings(tonumber(info['idmp-duration']), tonumber(info['idmp-maxsize']), m)
  if d then cfg = { 'XCFGSET', STREAM, 'IDMP-DURATION', d, 'IDMP-MAXSIZE', n } end
end

-- The stream before the adds: its last ID, and the counters that check
-- the outcomes told.
local last, added0, dups0 = '0-0', 0, 0
if info then
  last, added0, dups0 = info['last-generated-id'], info['entries-added'], info['iids-duplicates']
end

-- A decimal digit string plus one (IDs exceed a double's precision).
local function incr(s)
  local i = #s
  while i > 0 and string.sub(s, i, i) == '9' do i = i - 1 end
  if i == 0 then return '1' .. string.rep('0', #s) end
  return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) .. string.rep('0', #s - i)
end
-- The ID * generates next after ID id: the snapshot's ms with sequence 0
-- when it is later than id's, else id's next sequence (18446744073709551615
-- is the last; the ms after it then).
local function next_id(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  if #ms < 15 and tonumber(ms) < now then return string.format('%d-0', now) end
  if seq == '18446744073709551615' then return incr(ms) .. '-0' end
  return ms .. '-' .. incr(seq)
end

if DRY == '1' then return { 'K' } end -- checked: nothing is added

------------------------------------------------------------------------
-- Part 2: the adds, each an XADD under pcall: one that fails (OOM at the
-- first write, an exhausted ID space) stops the run, and the record counts
-- exactly the adds before it. Then the record, which cannot fail: its
-- type, the arguments and every permission were checked above, and a
-- script past its first write is not refused for memory.
------------------------------------------------------------------------

if cfg and exists then
  local r = redis.pcall(unpack(cfg))
  if type(r) == 'table' and r.err then return { '', 'e', r.err } end
end

local rpcall, xadd, rtype = redis.pcall, 'XADD', type
local ids, ndone, stop, message = {}, 0, '', ''
-- stopped says why an add replied no ID.
local function stopped(r)
  if r then stop, message = 'e', r.err else stop = 'n' end
end
local plain = nhead == 2 and not auto and nknown == 0 -- IDMP, no options, no emulated state consulted
a = first
if plain and named and not packed and (uniform == 4 or uniform == 2) then
  -- The common batch, without a test or a table an item: one or two
  -- fields named alike.
  local pid, n1, n2 = argv[ITEMS], names[1], names[2]
  for i = 1, nitems do
    local id
    if n2 then
      id = rpcall(xadd, STREAM, 'IDMP', pid, argv[a], '*', n1, argv[a + 1], n2, argv[a + 2])
    else
      id = rpcall(xadd, STREAM, 'IDMP', pid, argv[a], '*', n1, argv[a + 1])
    end
    if rtype(id) ~= 'string' then
      stopped(id)
      break
    end
    ids[i], ndone, a = id, i, a + 1 + nvals
  end
elseif plain and named and packed and (uniform == 4 or uniform == 2) then
  local big, lens, pid, n1, n2 = argv[first], argv[first + 1], argv[ITEMS], names[1], names[2]
  for i = 1, nitems do
    local id
    local l1, l2, l3 = byte(lens, k, k + 2)
    local e1 = pos + l1
    local e2 = e1 + l2
    if n2 then
      local e3 = e2 + l3
      id = rpcall(xadd, STREAM, 'IDMP', pid, sub(big, pos, e1 - 1), '*', n1, sub(big, e1, e2 - 1), n2, sub(big, e2, e3 - 1))
      pos, k = e3, k + 3
    else
      id = rpcall(xadd, STREAM, 'IDMP', pid, sub(big, pos, e1 - 1), '*', n1, sub(big, e1, e2 - 1))
      pos, k = e2, k + 2
    end
    if rtype(id) ~= 'string' then
      stopped(id)
      break
    end
    ids[i], ndone = id, i
  end
else
  for i = 1, nitems do
    local pid, iid, fields = next_item()
    if known[i] then
      ids[i], ndone = known[i], i
    else
      local args = { unpack(head) }
      local j = nhead + 1
      args[j] = pid
      if not auto then
        j = j + 1
        args[j] = iid
      end
      args[j + 1] = '*'
      for f = 1, #fields do args[j + 1 + f] = fields[f] end
      local id = rpcall(xadd, unpack(args))
      if rtype(id) ~= 'string' then
        stopped(id)
        break
      end
      ids[i], ndone = id, i
    end
  end
end
if nknown > 0 and may_count then
  local n = 0
  for i = 1, ndone do
    if known[i] then n = n + 1 end
  end
  if n > 0 then redis.call('HINCRBY', META, 'iids-duplicates', n) end
end
if ndone == 0 then return { '', stop, message } end

-- Which adds were new: all, when the counters say so (the common case,
-- told without a look at each reply); else by the rule above, checked
-- against the counters. What the emulated state answered is a duplicate.
local done, unsure, added1 = ids, false, nil
if outcomes then
  local after = xinfo()
  added1 = after['entries-added']
  local nadds, ndups = added1 - added0, after['iids-duplicates'] - dups0
  if nadds ~= ndone - nknown or ndups ~= 0 or nknown > 0 then
    done = {}
    local n, expect = 0, next_id(last)
    for i = 1, ndone do
      if not known[i] and ids[i] == expect then
        n, done[i], expect = n + 1, ids[i], next_id(ids[i])
      else
        done[i] = false
      end
    end
    unsure = n ~= nadds or ndone - nknown - n ~= ndups
    for i = 1, ndone do
      if not done[i] then
        local still = 0
        if #redis.call('XRANGE', STREAM, ids[i], ids[i]) > 0 then still = 1 end
        done[i] = 'd' .. still .. ids[i]
      end
    end
  end
end
local replies = table.concat(done, ',')

-- The progress record counts the input lines whose adds are written: all of
-- the chunk's, or those up to the last item before one that stopped it (the
-- digest of those is not known here, so digest-line stays where it was).
-- The chunk's replies are kept for a client whose reply was lost; older
-- ones go (DROP). The record outlives its last chunk by PROGRESS_TTL ms: the
-- index scores it by that time, and xadd --batch drops it then.
if chunk then
  local upto = TO
  if ndone < nitems then
    local n = 0
    for l in string.gmatch(LINES, '[^,]+') do
      n = n + 1
      if n == ndone then
        upto = l
        break
      end
    end
  end
  local expires = now + tonumber(PROGRESS_TTL)
  local r = { 'line', upto, 'batch', BATCH_ID, 'pid', BATCH_PID, 'stream', STREAM, 'mode', 'native',
    'updated', now, 'expires', expires, 'run', RUN, 'r:' .. FROM, replies, 'entries', added1 }
  if ndone == nitems then r[#r + 1], r[#r + 2], r[#r + 3], r[#r + 4] = 'digest', DIGEST, 'digest-line', TO end
  if FROM == '0' then r[#r + 1], r[#r + 2] = 'started', now end
  redis.call('HSET', PROGRESS, unpack(r))
  redis.call('PERSIST', PROGRESS)
  redis.call('ZADD', BATCHES, expires, PROGRESS)
  redis.call('PERSIST', BATCHES)
  if DROP ~= '' and DROP ~= FROM then redis.call('HDEL', PROGRESS, 'r:' .. DROP) end
end
if unsure then return { replies, stop, message, 'u' } end
return { replies, stop, message }
