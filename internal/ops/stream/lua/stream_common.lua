-- Emulated IDMP: helpers prepended to every stream_emu_*.lua script.
--
-- Every script's arguments (stateArgs and defaultsArgs in args.go) give it
-- STREAM, the meta hash META and the pids set PIDS (keys), IDS_PREFIX and
-- ORDER_PREFIX (per-pid keys are prefix .. pid) and OWNER, the stream name
-- (owner of the meta hash), and last the server-level defaults; all keys
-- share the stream's hash tag, so they live in its cluster slot.
--
-- Every script has two parts (docs/emulated.md, "Scripts that cannot half-happen"):
-- first everything that can fail (argument counts and sizes, key types,
-- permissions, and every read of a key it did not declare, which a cluster
-- node refuses while the slot is MIGRATING and the key has moved), then the
-- writes, which cannot fail. In the second part what adds to the state comes
-- first and deletions last: a key a script emptied (Redis deletes an empty
-- list, hash, set or sorted set) is never written again in the same run.
-- No state key has a TTL (an eviction policy of volatile-* would drop it
-- first): expired iids, idle producers and old progress records are
-- removed by the scripts, on the server clock.

-- The redisconn prelude (now_ms, to_table, effects replication), the
-- call's arguments as locals (redisconn.NewLua) and the IDMP limits
-- (DEFAULT_DURATION, DEFAULT_MAXSIZE, MAX_DURATION, MAX_MAXSIZE,
-- MAX_FIELD_ARGS, from internal/idmp) come before this file.

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'

-- The index of xadd --batch progress records (see internal/idmp).
local BATCH_INDEX = META .. ':batches'
-- The server-level defaults (CONFIG SET stream-idmp-*, kept by idmpctl in
-- a key of their own that a script in another slot cannot read), the last
-- two arguments of every call: '' when the caller does not know them. A
-- stream's meta takes them when it is created, and keeps them.
local SERVER_DURATION, SERVER_MAXSIZE = tonumber(SERVER_DURATION_ARG), tonumber(SERVER_MAXSIZE_ARG)
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

-- An error naming a state key of another type, or nil when key is absent
-- or of type want.
local function bad_type(key, want)
  local t = key_type(key)
  if t == 'none' or t == want then return nil end
  return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. t .. ', not the ' .. want ..
    ' of emulated IDMP state: nothing was written')
end

local function xinfo()
  return to_table(redis.call('XINFO', 'STREAM', STREAM))
end

-- The meta hash; absent fields take Redis's defaults (a meta written
-- before the server-level defaults existed had them; one created since
-- holds its settings). owner is nil when there is
-- no emulated state. snap_id/snap_added/snap_sum are the stream's
-- last-generated-id, entries-added and that entry's content digest right
-- after our last write (R13 detection without a token); pids is the size
-- of the pids set after our last write (nil before it was kept), which
-- tells an evicted set. gen names the state's liveness token (below), nil
-- for a state without one. unordered: a producer may hold iids out of
-- their entries' order (XIDMPRECORD of an older entry), so expiry scans
-- from the front instead of searching.
local function load_meta()
  local v = redis.call('HMGET', META, 'duration', 'maxsize', 'iids-added',
    'iids-duplicates', 'stream', 'snap-id', 'snap-added', 'snap-sum', 'pids', 'gen', 'unordered')
  return {
    duration = tonumber(v[1]) or DEFAULT_DURATION,
    maxsize = tonumber(v[2]) or DEFAULT_MAXSIZE,
    added = tonumber(v[3]) or 0,
    dups = tonumber(v[4]) or 0,
    owner = v[5] or nil,
    snap_id = v[6] or nil,
    snap_added = tonumber(v[7]),
    snap_sum = (v[8] and v[8] ~= '') and v[8] or nil,
    pids = tonumber(v[9]),
    gen = (v[10] and v[10] ~= '') and v[10] or nil,
    unordered = v[11] == '1',
  }
end

-- The liveness token of a stream's emulated state (R13): a consumer group
-- on the stream itself, named TOKEN_PREFIX .. gen, gen kept in the meta
-- hash. A group lives and dies with its stream key: DEL, expiry, FLUSHDB
-- or a rebuild by any client leave a stream without it, and RENAME, COPY,
-- MOVE, SWAPDB and DUMP/RESTORE carry it. So a state whose token its
-- stream lacks is of another stream of the same name, however alike the
-- two look. Its last-delivered-id is the highest ID: nothing is ever
-- pending for it, and trimming with ACKED (Redis 8.2+) takes it for a
-- group that has read every entry. Its name has 20 bytes, which an RDB
-- (and a DUMP payload) keeps uncompressed.
local TOKEN_PREFIX = 'idmpctl:'
local TOKEN_LAST_ID = '18446744073709551615-18446744073709551615'

-- Whether the stream carries the token of gen: nil when that cannot be
-- read (a user who may not run XINFO CONSUMERS): the snapshot decides.
local function token_alive(gen)
  if redis.acl_check_cmd and not redis.acl_check_cmd('XINFO', 'CONSUMERS', STREAM, TOKEN_PREFIX .. gen) then
    return nil
  end
  local r = redis.pcall('XINFO', 'CONSUMERS', STREAM, TOKEN_PREFIX .. gen)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'NOGROUP', 1, true) then return false end
    return nil
  end
  return true
end

-- A new token's gen for a state written now (part 1), or nil when the
-- user may not create the group: the state then goes without one, and the
-- snapshot tells a recreated stream as well as it can. Unique per stream
-- incarnation: the server's clock in microseconds, the name and the
-- stream's position.
local function plan_token(info)
  if redis.acl_check_cmd and not redis.acl_check_cmd('XGROUP', 'CREATE', STREAM, TOKEN_PREFIX .. '0', TOKEN_LAST_ID) then
    return nil
  end
  local t = redis.call('TIME')
  local pos = info and (tostring(info['last-generated-id']) .. '/' .. tostring(info['entries-added'])) or 'new'
  return string.sub(redis.sha1hex(t[1] .. '.' .. t[2] .. '|' .. OWNER .. '|' .. pos), 1, 12)
end

-- Creates the token of gen on the stream (part 2, once the stream
-- exists): true when the stream has it. A state whose group could not be
-- made (OOM) does not name it.
local function create_token(gen)
  local r = redis.pcall('XGROUP', 'CREATE', STREAM, TOKEN_PREFIX .. gen, TOKEN_LAST_ID)
  return not (type(r) == 'table' and r.err and not string.find(r.err, 'BUSYGROUP', 1, true))
end

-- The native settings a stream takes from its emulated state m (the
-- guard at the first native add, migrate), its native ones being nd, nm:
-- nil, nil to leave them. Only native settings equal to the server's
-- defaults (the caller's, DEFAULTS_KNOWN) are replaced: others were given
-- to the stream. Even those may have been, with the same values (XINFO
-- cannot tell), so none is narrowed: each becomes the wider of the two
-- (a default never weakens stored state).
local function carried_settings(nd, nm, m)
  if not (DEFAULTS_KNOWN and nd == SERVER_DURATION and nm == SERVER_MAXSIZE) then return nil, nil end
  local d, n = math.max(nd, m.duration), math.max(nm, m.maxsize)
  if d == nd and n == nm then return nil, nil end
  return d, n
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
-- since our last write. A state with a token is stale exactly when its
-- stream lacks the token. Without one (state written before tokens, or
-- by a user who may not create groups) the snapshot decides: never true
-- for the same stream (short of XSETID): its last-generated-id and
-- entries-added only grow, the snapshot entry keeps its content, and
-- every entry above snap_id was added after the snapshot. A recreated
-- stream that passes all three is taken for the old one.
local function stale(info, m)
  if m.gen then
    local alive = token_alive(m.gen)
    if alive ~= nil then return not alive end
  end
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

-- Permission checks: each {command, args...} the second part of a script
-- may run, checked with redis.acl_check_cmd (Redis 7.0+, Valkey) before
-- anything is written. Servers without it (Redis 6.2) run the writes
-- unchecked: inspect --server says "available-unchecked" there (docs/emulated.md,
-- "Permissions").
local function denied(checks, who)
  local c = first_denied(checks)
  local key = c and (c[1] == 'XINFO' and c[3] or c[2])
  return c and redis.error_reply('NOPERM this user has no permission to run the ' .. string.upper(c[1]) ..
    ' command' .. (key and ' on key ' .. key or '') .. ', which ' .. (who or 'emulated IDMP') .. ' needs: nothing was written')
end

-- A check of an add (DRY, Streams.CheckAdd) names a refused read as a
-- refused write is named, rather than failing it: every read an add may
-- make, whatever the state holds now (a later add reads more than the
-- first: a producer's tracked and expired iids, idle producers), those
-- of both modes and then the mode's own (reads: {command, args...} each).
local function denied_reads(who, reads)
  local c = { { 'TYPE', STREAM }, { 'XINFO', 'STREAM', STREAM }, { 'EXISTS', META, PIDS }, { 'HMGET', META, 'f' },
    { 'TYPE', META }, { 'TYPE', PIDS }, { 'TIME' } }
  for _, r in ipairs(reads) do c[#c + 1] = r end
  return denied(c, who)
end

-- A plan to drop state: the keys to delete, and the pids and progress
-- records they were: the pids of the set (unless except_pids names them)
-- and the records of the index (unless except_keys names them). Undeclared
-- keys are read here (EXISTS), in the first part, so that a key a cluster
-- node no longer holds fails the script before it writes; only keys that
-- exist are deleted.
local function plan_drop(pids, records, except_pids, except_keys)
  local plan = { keys = {}, pids = {}, records = {} }
  local function add(k)
    if not except_keys[k] and redis.call('EXISTS', k) == 1 then plan.keys[#plan.keys + 1] = k end
  end
  if pids then
    for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
      if not except_pids[pid] then
        plan.pids[#plan.pids + 1] = pid
        add(IDS_PREFIX .. pid)
        add(ORDER_PREFIX .. pid)
      end
    end
  end
  if records then
    for _, k in ipairs(redis.call('ZRANGE', BATCH_INDEX, 0, -1)) do
      if not except_keys[k] then
        plan.records[#plan.records + 1] = k
        add(k)
      end
    end
  end
  return plan
end

-- The permission checks a drop plan needs.
local function drop_checks(plan, checks)
  for _, k in ipairs(plan.keys) do checks[#checks + 1] = { 'DEL', k } end
  return checks
end

-- Variadic calls in slices: Lua's unpack is bounded by the C stack.
local function bulk(cmd, key, list)
  for i = 1, #list, 4000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 3999, #list)))
  end
end

-- Deletes the keys of drop plans (second part: each exists, and each is
-- deleted once: a second DEL would touch a key that is gone).
local function run_drop(...)
  local keys, seen = {}, {}
  for _, plan in ipairs({ ... }) do
    for _, k in ipairs(plan.keys) do
      if not seen[k] then
        seen[k] = true
        keys[#keys + 1] = k
      end
    end
  end
  for i = 1, #keys, 1000 do
    redis.call('DEL', unpack(keys, i, math.min(i + 999, #keys)))
  end
end

-- Number of a pid's iids still within DURATION: those after the longest
-- prefix of the order list whose iids have expired (Redis expires from the
-- front of each producer's list, and stops at the first live one). The
-- list is in entry order, so a binary search finds that prefix's end;
-- unordered (XIDMPRECORD of an older entry) it is scanned from the front.
local function live_count(ids, order, dur_ms, now, unordered)
  local n = redis.call('LLEN', order)
  if unordered then
    local i = 0
    while i < n do
      local chunk = redis.call('LRANGE', order, i, i + 99)
      if #chunk == 0 then break end
      local idv = redis.call('HMGET', ids, unpack(chunk))
      for k = 1, #chunk do
        if idv[k] and id_ms(idv[k]) + dur_ms > now then return n - (i + k - 1) end
      end
      i = i + #chunk
    end
    return 0
  end
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
