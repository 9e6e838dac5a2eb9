-- Emulated XIDMPRECORD (R14, Redis 8.6.2+): attaches (pid, iid) to an
-- existing, not deleted entry of the stream, as if XADD IDMP had added it.
--
-- Arguments (recordArgs): IDS and ORDER, the pid's ids hash and order
-- list; PID, IID, and the entry ID as ms-seq (the caller reads it as Redis
-- does: "5" is 5-0). Reply: OK; or Redis 8.6.3's errors, in its order: ERR no such
-- key, WRONGTYPE, ERR No such message in stream, ERR IID already exists
-- for this producer with a different stream ID; or {'D'}, nothing written,
-- when the stream's state starts now and the server-level defaults (the
-- last two arguments) were not given.
--
-- As xidmprecordCommand does: the same triple again is OK and changes
-- nothing; a new pair counts in iids-added, goes to the end of the pid's
-- list and evicts the pid's oldest beyond MAXSIZE. An entry older than
-- the pid's newest then sits out of entry order (Redis expires from the
-- front and stops at the first live iid): the meta says so, and expiry
-- scans instead of searching.

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

if not string.match(ID or '', '^%d+%-%d+$') then
  return redis.error_reply('ERR idmpctl: malformed emulated XIDMPRECORD call (' .. #KEYS .. ' keys, ' .. #ARGV .. ' arguments)')
end
if PID == '' then return redis.error_reply('ERR producer ID must be non-empty') end
if IID == '' then return redis.error_reply('ERR idempotent ID must be non-empty') end

local t = key_type(STREAM)
if t == 'none' then return redis.error_reply('ERR no such key') end
if t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
if #redis.call('XRANGE', STREAM, ID, ID) == 0 then return redis.error_reply('ERR No such message in stream') end
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set') or bad_type(IDS, 'hash') or bad_type(ORDER, 'list')
if err then return err end
local m = load_meta()
err = conflict(m)
if err then return err end

-- reset: the state is another stream's (R13): it goes, and the pair
-- starts this stream's.
local info = xinfo()
local reset = m.owner ~= nil and stale(info, m)
local fresh = reset or not m.owner
if fresh and not DEFAULTS_KNOWN then return { 'D' } end
local old_gen, old_unordered, gen = m.gen, m.unordered, nil
if fresh or not m.gen then gen = plan_token(info) end
if fresh then m = fresh_meta() end
local now, dur_ms, maxsize = now_ms(), m.duration * 1000, m.maxsize

-- The pid's list: its expired front (all of it when reset), then the
-- live iids.
local len = redis.call('LLEN', ORDER)
local expired, junk = 0, nil
if reset then
  expired = len
  junk = redis.call('HKEYS', IDS)
elseif len > 0 then
  expired = len - live_count(IDS, ORDER, dur_ms, now, m.unordered)
end
local front = {}
if expired > 0 then front = redis.call('LRANGE', ORDER, 0, expired - 1) end

-- Tracked already: live, with this ID (nothing to do) or another.
local known = nil
if not reset then
  known = redis.call('HGET', IDS, IID)
  if known then
    for _, x in ipairs(front) do
      if x == IID then
        known = nil
        break
      end
    end
  end
end
if known then
  if known == ID then return { ok = 'OK' } end
  return redis.error_reply('ERR IID already exists for this producer with a different stream ID')
end

-- The pair goes last; the oldest live iids beyond MAXSIZE go with the
-- expired ones.
local live = len - expired
local evict = math.max(0, live + 1 - maxsize)
local pop = expired + evict
if evict > 0 then
  local more = redis.call('LRANGE', ORDER, expired, pop - 1)
  for _, x in ipairs(more) do front[#front + 1] = x end
end
local unordered = m.unordered
if not unordered and live - evict > 0 then
  local newest = redis.call('HGET', IDS, redis.call('LINDEX', ORDER, -1))
  if newest and id_less(ID, newest) then unordered = true end
end

-- The other producers' state and the progress records of a stream that
-- is gone (read now: see plan_drop).
local drop = { keys = {}, pids = {}, records = {} }
if reset then
  drop = plan_drop(true, true, { [PID] = true }, {})
  if redis.call('EXISTS', BATCH_INDEX) == 1 then drop.keys[#drop.keys + 1] = BATCH_INDEX end
end
local member = redis.call('SISMEMBER', PIDS, PID) == 1
local npids = 1
if not reset then
  npids = redis.call('SCARD', PIDS)
  if not member then npids = npids + 1 end
end

local checks = { { 'RPUSH', ORDER, 'x' }, { 'LTRIM', ORDER, '0', '-1' }, { 'PERSIST', ORDER },
  { 'HSET', IDS, 'f', 'v' }, { 'HDEL', IDS, 'f' }, { 'PERSIST', IDS },
  { 'SADD', PIDS, 'm' }, { 'SREM', PIDS, 'm' }, { 'PERSIST', PIDS },
  { 'HSET', META, 'f', 'v' }, { 'HINCRBY', META, 'f', '1' }, { 'XRANGE', STREAM, '-', '+' } }
if reset and (old_gen or old_unordered) then checks[#checks + 1] = { 'HDEL', META, 'f' } end
err = denied(drop_checks(drop, checks))
if err then return err end

------------------------------------------------------------------------
-- Part 2: the writes, none of which can fail; deletions last.
------------------------------------------------------------------------

local h = snapshot(info, nil, 0)
local made = gen ~= nil and create_token(gen)
if made then h[#h + 1], h[#h + 2] = 'gen', gen end
redis.call('RPUSH', ORDER, IID)
redis.call('HSET', IDS, IID, ID)
redis.call('PERSIST', ORDER)
redis.call('PERSIST', IDS)
redis.call('SADD', PIDS, PID)
redis.call('PERSIST', PIDS)
h[#h + 1], h[#h + 2] = 'pids', npids
if fresh then
  h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'duration', m.duration, 'maxsize', m.maxsize
  h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'iids-added', 1, 'iids-duplicates', 0
end
if unordered then h[#h + 1], h[#h + 2] = 'unordered', '1' end
redis.call('HSET', META, unpack(h))
if not fresh then redis.call('HINCRBY', META, 'iids-added', 1) end

-- Deletions: the popped front of the list (the old stream's whole list
-- when reset), the iids it held (not the pair, written above), the old
-- stream's fields, producers and records.
if pop > 0 then redis.call('LTRIM', ORDER, pop, -1) end
local dropped = {}
for _, x in ipairs(junk or front) do
  if x ~= IID then dropped[#dropped + 1] = x end
end
bulk('HDEL', IDS, dropped)
local stale_fields = {}
if reset and old_gen and not made then stale_fields[#stale_fields + 1] = 'gen' end
if reset and old_unordered and not unordered then stale_fields[#stale_fields + 1] = 'unordered' end
if #stale_fields > 0 then redis.call('HDEL', META, unpack(stale_fields)) end
if reset then
  bulk('SREM', PIDS, drop.pids)
  run_drop(drop)
end
return { ok = 'OK' }
