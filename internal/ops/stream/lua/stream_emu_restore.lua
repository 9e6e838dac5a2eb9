-- RESTORE of a DUMP payload of a stream that had emulated IDMP state
-- (stream_emu_dump.lua took both): the stream, then its state under the
-- restored key's names, as RESTORE carries a stream's tracking natively
-- (R15).
--
-- Arguments (restoreArgsOf in dump.go): the restored key, its meta hash and
-- pids set; KEYS[PID_KEYS + 2(j-1)], KEYS[PID_KEYS + 2j - 1]: ids hash and
-- order list of the state's pid j. NRESTORE: how many of RESTORE's
-- arguments follow from ARGV[REST] (ttl, payload, then REPLACE, ABSTTL,
-- IDLETIME s, FREQ f as given); then the state: duration, maxsize,
-- iids-added, iids-duplicates, gen, unordered, npids, and per pid: pid, n,
-- n iid/ID pairs; last, the server-level defaults.
-- Reply: RESTORE's own (its errors too: nothing is written then).
--
-- The key's old state (RESTORE ... REPLACE over a stream that had some)
-- goes: keys the new state writes are overwritten in place (new elements
-- first, the old ones trimmed after), the others deleted last.

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

local function malformed()
  return redis.error_reply('ERR idmpctl: malformed emulated RESTORE call (' .. #KEYS .. ' keys, ' .. #ARGV .. ' arguments)')
end
local nrestore = tonumber(NRESTORE)
if not nrestore or nrestore < 2 then return malformed() end
local rargs = { 'RESTORE', STREAM }
for i = REST, REST + nrestore - 1 do rargs[#rargs + 1] = ARGV[i] end
local a = REST + nrestore
local st = {
  duration = tonumber(ARGV[a]), maxsize = tonumber(ARGV[a + 1]), added = tonumber(ARGV[a + 2]),
  dups = tonumber(ARGV[a + 3]), gen = ARGV[a + 4], unordered = ARGV[a + 5] == '1',
}
local npids = tonumber(ARGV[a + 6])
if not (st.duration and st.maxsize and st.added and st.dups and npids) or #KEYS ~= PID_KEYS - 1 + 2 * npids then
  return malformed()
end
a = a + 7
local pids = {}
for j = 1, npids do
  local n = tonumber(ARGV[a + 1])
  if not n or ARGV[a] == '' then return malformed() end
  local p = { pid = ARGV[a], ids = KEYS[PID_KEYS + 2 * j - 2], order = KEYS[PID_KEYS + 2 * j - 1], iids = {}, pairs = {} }
  for k = 1, n do
    local iid, id = ARGV[a + 2 * k], ARGV[a + 2 * k + 1]
    if not iid or not id then return malformed() end
    p.iids[k] = iid
    p.pairs[2 * k - 1], p.pairs[2 * k] = iid, id
  end
  pids[j] = p
  a = a + 2 + 2 * n
end
if a ~= REST_LAST + 1 then return malformed() end

-- The key's old state, of the types the writes expect.
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
for _, p in ipairs(pids) do
  err = err or bad_type(p.ids, 'hash') or bad_type(p.order, 'list')
end
if err then return err end
local m = load_meta()
err = conflict(m)
if err then return err end
local mine = {}
for _, p in ipairs(pids) do
  mine[p.pid] = true
  p.oldlen = redis.call('LLEN', p.order)
  p.junk = redis.call('HKEYS', p.ids)
  p.had = redis.call('EXISTS', p.ids) == 1
end
local drop = plan_drop(true, true, mine, {})
if redis.call('EXISTS', BATCH_INDEX) == 1 then drop.keys[#drop.keys + 1] = BATCH_INDEX end
local fallback_gen = plan_token(nil)

local checks = { rargs, { 'HSET', META, 'f', 'v' }, { 'HDEL', META, 'f' }, { 'SADD', PIDS, 'm' }, { 'SREM', PIDS, 'm' },
  { 'PERSIST', PIDS }, { 'XRANGE', STREAM, '-', '+' } }
for _, p in ipairs(pids) do
  checks[#checks + 1] = { 'RPUSH', p.order, 'x' }
  checks[#checks + 1] = { 'LTRIM', p.order, '0', '-1' }
  checks[#checks + 1] = { 'PERSIST', p.order }
  checks[#checks + 1] = { 'HSET', p.ids, 'f', 'v' }
  checks[#checks + 1] = { 'HDEL', p.ids, 'f' }
  checks[#checks + 1] = { 'PERSIST', p.ids }
end
err = denied(drop_checks(drop, checks))
if err then return err end

------------------------------------------------------------------------
-- Part 2: RESTORE, the first write (its error stops the script before any
-- other); then the state; deletions last.
------------------------------------------------------------------------

local reply = redis.pcall(unpack(rargs))
if type(reply) == 'table' and reply.err then return reply end
if key_type(STREAM) ~= 'stream' then
  -- Not a stream after all: the state has nothing to follow; the old one
  -- is another stream's.
  for _, p in ipairs(pids) do
    if p.oldlen > 0 then drop.keys[#drop.keys + 1] = p.order end
    if p.had then drop.keys[#drop.keys + 1] = p.ids end
  end
  for _, k in ipairs({ META, PIDS }) do
    if redis.call('EXISTS', k) == 1 then drop.keys[#drop.keys + 1] = k end
  end
  run_drop(drop)
  return reply
end

local written = {}
for _, p in ipairs(pids) do
  if #p.iids > 0 then
    bulk('RPUSH', p.order, p.iids)
    bulk('HSET', p.ids, p.pairs)
    redis.call('PERSIST', p.order)
    redis.call('PERSIST', p.ids)
    written[#written + 1] = p.pid
  end
end
if #written > 0 then
  bulk('SADD', PIDS, written)
  redis.call('PERSIST', PIDS)
end
-- The token: the dumped stream's, when the restored one carries it (a
-- payload holds the stream's groups), else a new one.
local info = xinfo()
local h = snapshot(info, nil, 0)
local gen = nil
if st.gen ~= '' and token_alive(st.gen) then
  gen = st.gen
elseif fallback_gen and create_token(fallback_gen) then
  gen = fallback_gen
end
h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'duration', st.duration, 'maxsize', st.maxsize
h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'iids-added', st.added, 'iids-duplicates', st.dups
h[#h + 1], h[#h + 2] = 'pids', #written
if gen then h[#h + 1], h[#h + 2] = 'gen', gen end
if st.unordered then h[#h + 1], h[#h + 2] = 'unordered', '1' end
redis.call('HSET', META, unpack(h))

-- Deletions: the old elements of each list (before the new ones), the
-- old iids the new state does not hold, the old meta fields, producers
-- and records.
for _, p in ipairs(pids) do
  if p.oldlen > 0 then
    if #p.iids > 0 then redis.call('LTRIM', p.order, p.oldlen, -1) else drop.keys[#drop.keys + 1] = p.order end
  end
  local keep = {}
  for _, iid in ipairs(p.iids) do keep[iid] = true end
  local gone = {}
  for _, iid in ipairs(p.junk) do
    if not keep[iid] then gone[#gone + 1] = iid end
  end
  if #p.iids > 0 then bulk('HDEL', p.ids, gone) elseif p.had then drop.keys[#drop.keys + 1] = p.ids end
end
local stale_fields = {}
if not gen and m.gen then stale_fields[#stale_fields + 1] = 'gen' end
if not st.unordered and m.unordered then stale_fields[#stale_fields + 1] = 'unordered' end
if #stale_fields > 0 then redis.call('HDEL', META, unpack(stale_fields)) end
bulk('SREM', PIDS, drop.pids)
run_drop(drop)
return reply
