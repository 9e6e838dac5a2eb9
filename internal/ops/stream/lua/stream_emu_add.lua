-- Emulated IDMP: a batch of idempotent adds to one stream, decided and
-- written atomically on the server clock.
--
-- KEYS[4 + 2(j-1)], KEYS[5 + 2(j-1)]: ids hash and order list of pid j;
-- then, for a chunk of xadd --batch, its progress record and the stream's
-- index of progress records.
-- ARGV[4..8]: nomkstream ('1'|''), trim ('MAXLEN'|'MINID'|''), '='|'~',
-- threshold, limit (''|n), for every item.
-- ARGV[9]: '1' to refuse on a server that has IDMP of its own (auto mode).
-- ARGV[10..17]: a batch chunk's progress ('' in ARGV[10] for none): lines
-- done before it, lines done after it, the digest of those lines, the lines
-- done before the chunk whose stored replies go now ('' none), the record's
-- TTL in ms, the batch ID, its pid, and each item's input line (joined by
-- commas: read only when an item stops the chunk).
-- ARGV[18] = npids, then per pid: pid, number of items for it; then nitems;
-- then uniform: '' and per item: pid index, iid, nfields, fields...; or,
-- when every item is of the one pid and has the same number of fields (the
-- common batch), that number, and per item: iid, fields...
-- Reply: {done, stop, message}: done is the items written, comma-separated,
-- each its new ID, or 'd', 0|1 (the original entry still exists) and the
-- original's ID; stop is '' when every item was done, else why the
-- next one stopped the run: 'n' no stream (NOMKSTREAM), 'e' an error
-- (message). Items before a stop stay written. One string, not three
-- values an item: a reply of thousands of elements costs the server more
-- than the adds.
-- Refusals, with nothing written: {'N'} the server has native IDMP (ARGV[9]);
-- {'D'} the stream's state starts now and the server-level defaults, the
-- last two arguments, were not given;
-- {'P', lines} the progress record stands at another line count (a chunk
-- sent again after it was committed, or another run of the same batch).
--
-- Per item the script only calls XADD: each pid's known iids are read with
-- one HMGET up front and its new iids written in bulk at the end. MAXSIZE
-- eviction inside the batch is tracked by list position, so a later repeat
-- of an iid evicted earlier in the same batch is a new entry (R5, R11).

-- A command the server does not know is "Unknown" to a script; one it knows
-- fails on its arity first (before ACL checks), and changes nothing.
if ARGV[9] == '1' then
  local r = redis.pcall('XCFGSET')
  if not (type(r) == 'table' and r.err and string.find(r.err, 'nknown', 1, true)) then return { 'N' } end
end

local t = key_type(STREAM)
if t ~= 'none' and t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local m = load_meta()
local err = conflict(m)
if err then return err end

local exists, info = t == 'stream', nil
local drop = false
if exists then
  info = xinfo()
  drop = stale(info, m)
else
  -- R13: the stream is gone, so is everything it remembered.
  drop = m.owner ~= nil or redis.call('EXISTS', PIDS) == 1
end
-- A stream whose state starts now takes the server-level defaults: a
-- caller that did not send them is asked to ({'D'}), before any write.
if (drop or not m.owner) and not DEFAULTS_KNOWN then return { 'D' } end
if drop then drop_state(false) end
if drop or not m.owner then m = fresh_meta() end

-- Variadic calls in slices: Lua's unpack is bounded by the C stack.
local function bulk(cmd, key, list)
  for i = 1, #list, 4000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 3999, #list)))
  end
end

-- Whether the iid this batch pushed k-th for pid p is still tracked once
-- the order list's positions below evict are gone (R5).
local function tracked(p, k, evict)
  return p.start + k - 1 >= evict
end

local now = now_ms()
local dur_ms, maxsize = m.duration * 1000, m.maxsize
local nomk = ARGV[4] == '1'
-- XADD's arguments before the fields, the same for every item.
local head = { STREAM }
if nomk then head[#head + 1] = 'NOMKSTREAM' end
if ARGV[5] ~= '' then
  head[#head + 1], head[#head + 2], head[#head + 3] = ARGV[5], ARGV[6], ARGV[7]
  if ARGV[8] ~= '' then head[#head + 1], head[#head + 2] = 'LIMIT', ARGV[8] end
end
head[#head + 1] = '*'
local nhead = #head

-- Small integers recur on every item (pid index, field count): each string
-- is converted once.
local ints = {}
local function int(s)
  local v = ints[s]
  if not v then
    v = tonumber(s)
    ints[s] = v
  end
  return v
end

local npids = tonumber(ARGV[18])
local first = 21 + 2 * npids -- the first item
local nitems = tonumber(ARGV[first - 2])
local uniform = tonumber(ARGV[first - 1])

-- The chunk's progress record moves from ARGV[10] lines to ARGV[11] with
-- the adds, compare-and-set: a chunk that was committed already (its reply
-- lost, or its connection stalled and given up) finds the record moved on.
local batch = ARGV[10] ~= ''
local PROGRESS, BATCHES = KEYS[4 + 2 * npids], KEYS[5 + 2 * npids]
if batch then
  local line = redis.call('HGET', PROGRESS, 'line') or '0'
  if line ~= ARGV[10] then return { 'P', line } end
end

-- Per pid: drop expired iids, then read what may matter to this batch.
local per = {}
for j = 1, npids do
  local ids, order = KEYS[2 + 2 * j], KEYS[3 + 2 * j]
  while true do
    local oldest = redis.call('LINDEX', order, 0)
    if not oldest then break end
    local id = redis.call('HGET', ids, oldest)
    if id and id_ms(id) + dur_ms > now then break end
    redis.call('LPOP', order)
    redis.call('HDEL', ids, oldest)
  end
  -- pushed[k] is the k-th iid this batch pushes and newid[k] its entry ID;
  -- pos[iid] is the last position it was pushed at.
  local p = { ids = ids, order = order, pid = ARGV[17 + 2 * j], start = redis.call('LLEN', order),
    count = tonumber(ARGV[18 + 2 * j]), known = {}, pos = {}, cand = {}, pushed = {}, newid = {}, n = 0 }
  -- Old iids this batch can evict: the list's first (start + count - maxsize).
  local reach = math.min(p.start, p.start + p.count - maxsize)
  if reach > 0 then
    for i, iid in ipairs(redis.call('LRANGE', order, 0, reach - 1)) do p.cand[iid] = i - 1 end
  end
  per[j] = p
end
-- The iids each pid tracks that this batch asks about: all of them when
-- they are few (a small hash is a listpack, where every HMGET field is a
-- scan), else one HMGET of the batch's iids, gathered in a pass over the
-- items that only such pids need.
local asking = false
for j = 1, npids do
  local p = per[j]
  if p.start <= 512 or p.start <= 2 * p.count then
    p.known = to_table(redis.call('HGETALL', p.ids))
  else
    p.asked, asking = {}, true
  end
end
local a = first
if asking then
  for _ = 1, nitems do
    if uniform then
      local l = per[1].asked
      l[#l + 1] = ARGV[a]
      a = a + 1 + uniform
    else
      local l = per[int(ARGV[a])].asked
      if l then l[#l + 1] = ARGV[a + 1] end
      a = a + 3 + int(ARGV[a + 2])
    end
  end
  for _, p in ipairs(per) do
    local l = p.asked
    for i = 1, l and #l or 0, 4000 do
      local last = math.min(i + 3999, #l)
      local v = redis.call('HMGET', p.ids, unpack(l, i, last))
      for k = i, last do
        if v[k - i + 1] then p.known[l[k]] = v[k - i + 1] end
      end
    end
  end
end

-- The loop below runs once an item: globals it uses are made locals (a
-- global is a table lookup at every use).
local argv, rpcall, xadd = ARGV, redis.pcall, 'XADD'
local nadds, ndups, last_id = 0, 0, nil
local done, ndone, stop, message = {}, 0, '', ''
a = first
-- The current pid's state is kept in locals while items go on with the same
-- pid (a batch has one): a field of a table is a lookup at every use.
local cur, p, pos, known, newid, pushed, cand, start, n
for _ = 1, nitems do
  local j, iid, nf, f0
  if uniform then
    j, iid, nf, f0 = '1', argv[a], uniform, a + 1
  else
    j, iid, nf, f0 = argv[a], argv[a + 1], argv[a + 2], a + 3
    nf = ints[nf] or int(nf)
  end
  a = f0 + nf
  if j ~= cur then
    if p then p.n = n end
    cur, p = j, per[int(j)]
    pos, known, newid, pushed, cand, start, n = p.pos, p.known, p.newid, p.pushed, p.cand, p.start, p.n
  end
  if p.pid == '' or iid == '' then
    local what = 'producer'
    if p.pid ~= '' then what = 'idempotent' end
    stop, message = 'e', 'ERR IDMP requires a non-empty ' .. what .. ' ID'
    break
  end
  if not exists and nomk then
    stop = 'n'
    break
  end
  -- List positions below evict are gone (R5): old ones, or pushed earlier
  -- here (tracked, inlined).
  local evict = start + n - maxsize
  local orig
  local k = pos[iid]
  if k then
    if start + k - 1 >= evict then orig = newid[k] end
  else
    orig = known[iid]
    if orig then
      local c = cand[iid]
      if c and c < evict then orig = nil end
    end
  end
  if orig then
    -- R2/R10: reply the original ID; add nothing, trim nothing.
    ndups = ndups + 1
    local still = 0
    if #redis.call('XRANGE', STREAM, orig, orig) > 0 then still = 1 end
    ndone = ndone + 1
    done[ndone] = 'd' .. still .. orig
  else
    local id
    if nhead == 2 and nf == 4 then
      id = rpcall(xadd, STREAM, '*', argv[f0], argv[f0 + 1], argv[f0 + 2], argv[f0 + 3])
    elseif nhead == 2 and nf == 2 then
      id = rpcall(xadd, STREAM, '*', argv[f0], argv[f0 + 1])
    else
      local args = { unpack(head) }
      for f = f0, f0 + nf - 1 do args[nhead + f - f0 + 1] = argv[f] end
      id = rpcall(xadd, unpack(args))
    end
    if type(id) ~= 'string' then
      if id then stop, message = 'e', id.err else stop = 'n' end
      break
    end
    n = n + 1
    pushed[n], pos[iid], newid[n] = iid, n, id
    nadds, exists, last_id = nadds + 1, true, id
    ndone = ndone + 1
    done[ndone] = id
  end
end
if p then p.n = n end

if nadds + ndups > 0 then
  local set_ttl = 0
  for _, p in ipairs(per) do
    local n = p.n
    if n > 0 then
      -- The list loses its first evict positions: old iids, then iids
      -- pushed here. Only the old ones are popped, and only the pushed
      -- ones that stay are pushed: the others were never written.
      local evict = p.start + n - maxsize
      local gone = {}
      if evict > 0 and p.start > 0 then gone = redis.call('LPOP', p.order, math.min(evict, p.start)) or {} end
      local kfirst = math.max(1, evict - p.start + 1)
      local keep, stay, drop = {}, {}, {}
      for k = kfirst, n do
        local iid = p.pushed[k]
        stay[#stay + 1] = iid
        if p.pos[iid] == k then keep[#keep + 1], keep[#keep + 2] = iid, p.newid[k] end
      end
      for _, iid in ipairs(gone) do
        local k = p.pos[iid]
        if not (k and tracked(p, k, evict)) then drop[#drop + 1] = iid end
      end
      bulk('RPUSH', p.order, stay)
      bulk('HDEL', p.ids, drop)
      bulk('HSET', p.ids, keep)
      local ahead = id_ms(p.newid[n]) - now
      if ahead < 0 then ahead = 0 elseif ahead > MAX_AHEAD_MS then ahead = MAX_AHEAD_MS end
      local ttl = ahead + dur_ms + TTL_SLACK_MS
      redis.call('SADD', PIDS, p.pid)
      redis.call('PEXPIRE', p.ids, ttl)
      redis.call('PEXPIRE', p.order, ttl)
      if ttl > set_ttl then set_ttl = ttl end
    end
  end
  -- The pids set lives as long as its longest-lived pid.
  if set_ttl > 0 and redis.call('PTTL', PIDS) < set_ttl then
    redis.call('PEXPIRE', PIDS, set_ttl)
  end
  -- Drop a few pids whose keys have expired, so the set stays bounded.
  for _, p in ipairs(redis.call('SRANDMEMBER', PIDS, 2)) do
    if redis.call('EXISTS', ORDER_PREFIX .. p) == 0 then redis.call('SREM', PIDS, p) end
  end
  local h = snapshot(info, last_id, nadds)
  if m.fresh then
    h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'duration', m.duration, 'maxsize', m.maxsize
  end
  redis.call('HSET', META, unpack(h))
  if nadds > 0 then redis.call('HINCRBY', META, 'iids-added', nadds) end
  if ndups > 0 then redis.call('HINCRBY', META, 'iids-duplicates', ndups) end
end

-- The progress record counts the input lines whose adds are written: all of
-- the chunk's, or those up to the last item before one that stopped it (the
-- digest of those is not known here, so digest-line stays where it was).
-- The chunk's replies are kept for a client whose reply was lost; older
-- ones go (ARGV[13]).
local replies = table.concat(done, ',')
if batch and ndone > 0 then
  local from, ttl = tonumber(ARGV[10]), tonumber(ARGV[14])
  local line = ARGV[11]
  if ndone < nitems then
    local k = 0
    for l in string.gmatch(ARGV[17], '[^,]+') do
      k = k + 1
      if k == ndone then line = l break end
    end
  end
  local h = { 'line', line, 'batch', ARGV[15], 'pid', ARGV[16], 'stream', OWNER,
    'mode', 'emulated', 'updated', now, 'r:' .. ARGV[10], replies }
  if ndone == nitems then h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'digest', ARGV[12], 'digest-line', ARGV[11] end
  if from == 0 then h[#h + 1], h[#h + 2] = 'started', now end
  local ea = info and info['entries-added']
  if ea ~= nil then h[#h + 1], h[#h + 2] = 'entries', ea + nadds
  elseif info == nil then h[#h + 1], h[#h + 2] = 'entries', nadds end
  redis.call('HSET', PROGRESS, unpack(h))
  if ARGV[13] ~= '' then redis.call('HDEL', PROGRESS, 'r:' .. ARGV[13]) end
  redis.call('PEXPIRE', PROGRESS, ttl)
  redis.call('ZADD', BATCHES, now, PROGRESS)
  if redis.call('PTTL', BATCHES) < ttl then redis.call('PEXPIRE', BATCHES, ttl) end
end
return { replies, stop, message }
