-- Emulated IDMP: helpers prepended to every stream_emu_*.lua script.
--
-- Every script gets KEYS[1] = stream, KEYS[2] = meta hash, KEYS[3] = pids set
-- and ARGV[1] = ids key prefix, ARGV[2] = order key prefix, ARGV[3] = the
-- stream name (owner of the meta hash). Per-pid keys are prefix .. pid; all
-- keys share the stream's hash tag, so they live in its cluster slot.

-- The redisconn prelude (now_ms, to_table, effects replication) and the
-- IDMP limits (DEFAULT_DURATION, DEFAULT_MAXSIZE, MAX_DURATION,
-- MAX_MAXSIZE, from internal/idmp) come before this file.

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
-- Per-pid keys outlive their newest iid by this much, so TTL never forgets
-- an iid that DURATION still covers.
local TTL_SLACK_MS = 1000
-- A stream ID in the far future must not overflow PEXPIRE.
local MAX_AHEAD_MS = 10 * 365 * 86400 * 1000

local STREAM, META, PIDS = KEYS[1], KEYS[2], KEYS[3]
-- The index of xadd --batch progress records (see internal/idmp).
local BATCH_INDEX = META .. ':batches'
local IDS_PREFIX, ORDER_PREFIX, OWNER = ARGV[1], ARGV[2], ARGV[3]
-- The server-level defaults (CONFIG SET stream-idmp-*, kept by idmpctl in
-- a key of their own that a script in another slot cannot read), the last
-- two arguments of every call: '' when the caller does not know them. A
-- stream's meta takes them when it is created, and keeps them.
local SERVER_DURATION, SERVER_MAXSIZE = tonumber(ARGV[#ARGV - 1]), tonumber(ARGV[#ARGV])
local DEFAULTS_KNOWN = SERVER_DURATION ~= nil and SERVER_MAXSIZE ~= nil

-- An entry ID's ms and seq parts as digit strings.
local function split_id(id)
  local ms, seq = string.match(id or '', '^(%d+)-(%d+)$')
  return ms or '0', seq or '0'
end

-- Compares decimal digit strings exactly (IDs exceed a double's precision).
local function num_less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end

local function id_less(a, b)
  local am, as = split_id(a)
  local bm, bs = split_id(b)
  if am ~= bm then return num_less(am, bm) end
  return num_less(as, bs)
end

local function id_ms(id)
  return tonumber((split_id(id)))
end

local function key_type(key)
  return redis.call('TYPE', key)['ok']
end

local function xinfo()
  return to_table(redis.call('XINFO', 'STREAM', STREAM))
end

-- The meta hash; absent fields take Redis's defaults (a meta written
-- before the server-level defaults existed had them; one created since
-- holds its settings). owner is nil when there is
-- no emulated state. snap_id/snap_added/snap_sum are the stream's
-- last-generated-id, entries-added and that entry's content digest right
-- after our last write (R13 detection).
local function load_meta()
  local v = redis.call('HMGET', META, 'duration', 'maxsize', 'iids-added',
    'iids-duplicates', 'stream', 'snap-id', 'snap-added', 'snap-sum')
  return {
    duration = tonumber(v[1]) or DEFAULT_DURATION,
    maxsize = tonumber(v[2]) or DEFAULT_MAXSIZE,
    added = tonumber(v[3]) or 0,
    dups = tonumber(v[4]) or 0,
    owner = v[5] or nil,
    snap_id = v[6] or nil,
    snap_added = tonumber(v[7]),
    snap_sum = (v[8] and v[8] ~= '') and v[8] or nil,
  }
end

-- The meta of a stream whose state starts now: the server-level defaults.
local function fresh_meta()
  return { duration = SERVER_DURATION or DEFAULT_DURATION, maxsize = SERVER_MAXSIZE or DEFAULT_MAXSIZE,
    added = 0, dups = 0, fresh = true }
end

-- Two stream names that map to the same state keys ("s" and "{s}") must not
-- share iids: refuse instead.
local function conflict(m)
  if m.owner and m.owner ~= OWNER then
    return redis.error_reply('IDMPCONFLICT emulated IDMP state ' .. META ..
      ' belongs to stream ' .. m.owner)
  end
  return nil
end

-- A digest of the entry with this ID, nil when there is none.
local function entry_sum(id)
  local e = redis.call('XRANGE', STREAM, id, id)
  if #e == 0 then return nil end
  local parts = {}
  for _, s in ipairs(e[1][2]) do parts[#parts + 1] = #s .. ':' .. s end
  return redis.sha1hex(table.concat(parts))
end

-- stale reports whether the stream was deleted and recreated by someone else
-- since our last write. Never true for the same stream (short of XSETID):
-- its last-generated-id and entries-added only grow, the snapshot entry keeps
-- its content, and every entry above snap_id was added after the snapshot.
-- A recreated stream that passes all three is taken for the old one.
local function stale(info, m)
  if not m.snap_id then return false end
  if id_less(info['last-generated-id'], m.snap_id) then return true end
  local ea = info['entries-added'] -- absent before Redis 7.0
  if ea ~= nil and m.snap_added ~= nil and ea < m.snap_added then return true end
  if m.snap_sum then
    local sum = entry_sum(m.snap_id)
    if sum then return sum ~= m.snap_sum end
  end
  if ea == nil or m.snap_added == nil then return false end
  -- k entries were added since the snapshot: more than k above snap_id means
  -- another stream. Counted when cheap, else only when all entries are above.
  local k = ea - m.snap_added
  if k <= 64 then
    local above = redis.pcall('XRANGE', STREAM, '(' .. m.snap_id, '+', 'COUNT', k + 1)
    if not above.err then return #above > k end
  end
  local len, first = info['length'], info['first-entry']
  if len > 0 and first and not id_less(m.snap_id, first[1]) then return false end
  return len > k
end

-- Deletes every pid's state, and unless keep_meta (a stream that is gone
-- or was recreated, R13) the meta hash and the progress records of batches
-- too: their lines are not in this stream.
local function drop_state(keep_meta)
  for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
    redis.call('DEL', IDS_PREFIX .. pid, ORDER_PREFIX .. pid)
  end
  redis.call('DEL', PIDS)
  if not keep_meta then
    for _, k in ipairs(redis.call('ZRANGE', BATCH_INDEX, 0, -1)) do redis.call('DEL', k) end
    redis.call('DEL', META, BATCH_INDEX)
  end
end

-- The meta of an existing stream, or nil and the reply to return at once:
-- WRONGTYPE, a name conflict, or `missing` when the stream does not exist
-- (whose leftover state is dropped then: R13).
local function open_existing(missing)
  local t = key_type(STREAM)
  if t ~= 'none' and t ~= 'stream' then return nil, redis.error_reply(WRONGTYPE) end
  local m = load_meta()
  local err = conflict(m)
  if err then return nil, err end
  if t == 'none' then
    if m.owner or redis.call('EXISTS', PIDS) == 1 then drop_state(false) end
    return nil, missing
  end
  return m, nil
end

-- Number of a pid's iids still within DURATION. The order list is in entry
-- order, so the expired ones are a prefix: binary search for its end.
local function live_count(ids, order, dur_ms, now)
  local n = redis.call('LLEN', order)
  local lo, hi = 0, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local id = redis.call('HGET', ids, redis.call('LINDEX', order, mid))
    if id and id_ms(id) + dur_ms > now then hi = mid else lo = mid + 1 end
  end
  return n - lo
end

-- The snapshot fields to store after a write.
local function snapshot(info, last_id, nadds)
  local snap_id = last_id or (info and info['last-generated-id'])
  local h = { 'stream', OWNER, 'snap-id', snap_id, 'snap-sum', entry_sum(snap_id) or '' }
  if info == nil then
    h[#h + 1], h[#h + 2] = 'snap-added', nadds
  elseif info['entries-added'] ~= nil then
    h[#h + 1], h[#h + 2] = 'snap-added', info['entries-added'] + nadds
  end
  return h
end
