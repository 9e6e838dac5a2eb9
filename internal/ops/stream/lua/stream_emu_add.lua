-- Emulated IDMP: a batch of idempotent adds to one stream, decided and
-- written atomically on the server clock.
--
-- Arguments (addArgs in emulated.go), after the common ones:
-- KEYS[PID_KEYS + 2(j-1)], KEYS[PID_KEYS + 2j - 1]: ids hash and order
-- list of pid j; then, for a chunk of xadd --batch, its progress record
-- and the stream's index of progress records.
-- NOMK ('1'|''), DELETION (''|KEEPREF|DELREF|ACKED), TRIM
-- ('MAXLEN'|'MINID'|''), TRIM_OP '='|'~', THRESHOLD, LIMIT (''|n), for
-- every item.
-- A batch chunk's progress (FROM '' for none): FROM lines done before it,
-- TO lines done after it, the DIGEST of those lines, DROP the lines done
-- before the chunk whose stored replies go now ('' none), PROGRESS_TTL how
-- long the record outlives this chunk in ms, the BATCH_ID, its BATCH_PID,
-- each item's input line (LINES, joined by commas: read only when an item
-- stops the chunk), and the RUN that sends it.
-- NPIDS, then from ARGV[ITEMS] per pid: pid, number of items for it; then nitems;
-- then uniform: '' and per item: pid index, iid, nfields, fields...; or,
-- when every item is of the one pid and has the same number of fields (the
-- common batch), that number, and per item: iid, fields...; last, the
-- server-level defaults (see stream_common.lua).
-- Reply: {done, stop, message}: done is the items written, comma-separated,
-- each its new ID, or 'd', 0|1 (the original entry still exists) and the
-- original's ID; stop is '' when every item was done, else why the
-- next one stopped the run: 'n' no stream (NOMKSTREAM), 'e' an error
-- (message). Items before a stop stay written, and tracked. One string,
-- not three values an item: a reply of thousands of elements costs the
-- server more than the adds.
-- DRY '1': nothing is added; the reply is {'K'} where the adds would be
-- tried (Streams.CheckAdd), else the refusal they would get.
-- Refusals, with nothing written: {'D'} the stream's state starts now and the server-level defaults, the
-- last two arguments, were not given;
-- {'P', lines} the progress record stands at another line count (a chunk
-- sent again after it was committed, or another run of the same batch);
-- {'F', item, nfields} an item has more field/value arguments than one
-- XADD from Lua can take (MAX_FIELD_ARGS); and the errors of part 1.
--
-- Per item the script only calls XADD: each pid's known iids are read with
-- one HMGET up front and its new iids written in bulk at the end. MAXSIZE
-- eviction inside the batch is tracked by list position, so a later repeat
-- of an iid evicted earlier in the same batch is a new entry (R5, R11).

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

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

-- The call's shape: its arguments are counted before anything else.
local argv = ARGV
local npids = tonumber(NPIDS)
local first = ITEMS + 2 + 2 * (npids or 0) -- the first item
local nitems, uniform = tonumber(argv[first - 2]), tonumber(argv[first - 1])
local batch = FROM ~= ''
local function malformed()
  return redis.error_reply('ERR idmpctl: malformed emulated XADD call (' .. #KEYS .. ' keys, ' .. #argv .. ' arguments)')
end
if not npids or npids < 1 or not nitems or nitems < 1 or #KEYS ~= PID_KEYS - 1 + 2 * npids + (batch and 2 or 0)
  or (batch and not tonumber(PROGRESS_TTL)) then
  return malformed()
end
-- Every item: a known pid, a non-empty iid, and no more field/value
-- arguments than one XADD from Lua takes (unpack stops near 8,000 values).
-- The last two arguments are the server-level defaults (common).
local nargv = ITEMS_LAST
local a = first
for i = 1, nitems do
  local j, iid, nf
  if uniform then
    j, iid, nf = 1, argv[a], uniform
    a = a + 1 + nf
  else
    j, iid, nf = int(argv[a]), argv[a + 1], int(argv[a + 2] or '')
    if not j or not nf then return malformed() end
    a = a + 3 + nf
  end
  if j < 1 or j > npids or nf < 2 or nf % 2 ~= 0 or a - 1 > nargv then return malformed() end
  if nf > MAX_FIELD_ARGS then return { 'F', tostring(i), tostring(nf) } end
  if argv[ITEMS + 2 * j - 2] == '' then return redis.error_reply('ERR syntax error, IDMP requires a non-empty producer ID') end
  if iid == '' then return redis.error_reply('ERR syntax error, IDMP requires a non-empty idempotent ID') end
end
if a - 1 ~= nargv then return malformed() end
if DRY == '1' then
  -- The pids set, the batch index (of a state dropped) and each pid's
  -- ids hash and order list, as part 1 below may read them.
  local reads = { { 'SMEMBERS', PIDS }, { 'SRANDMEMBER', PIDS, '3' }, { 'SCARD', PIDS }, { 'SISMEMBER', PIDS, 'm' },
    { 'EXISTS', BATCH_INDEX }, { 'ZRANGE', BATCH_INDEX, '0', '-1' } }
  for j = 1, npids do
    local ids, order = KEYS[PID_KEYS + 2 * j - 2], KEYS[PID_KEYS + 2 * j - 1]
    for _, r in ipairs({ { 'TYPE', ids }, { 'HKEYS', ids }, { 'HGET', ids, 'i' }, { 'HGETALL', ids }, { 'HMGET', ids, 'i' },
      { 'TYPE', order }, { 'LLEN', order }, { 'LINDEX', order, '0' }, { 'LRANGE', order, '0', '-1' } }) do
      reads[#reads + 1] = r
    end
  end
  local err = denied_reads(nil, reads)
  if err then return err end
end

-- Every key of the types the writes expect.
local t = key_type(STREAM)
if t ~= 'none' and t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local PROGRESS, BATCHES = KEYS[PID_KEYS + 2 * npids], KEYS[PID_KEYS + 2 * npids + 1]
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
if not err and batch then err = bad_type(PROGRESS, 'hash') or bad_type(BATCHES, 'zset') end
for j = 1, npids do
  if err then break end
  err = bad_type(KEYS[PID_KEYS + 2 * j - 2], 'hash') or bad_type(KEYS[PID_KEYS + 2 * j - 1], 'list')
end
if err then return err end

local m = load_meta()
err = conflict(m)
if err then return err end

-- reset: the state is that of a stream that is gone, deleted or recreated
-- by someone else (R13): it goes, and this call starts afresh.
local exists, info = t == 'stream', nil
local reset
if exists then
  info = xinfo()
  reset = stale(info, m)
else
  reset = m.owner ~= nil or redis.call('EXISTS', PIDS) == 1
end
-- A stream whose state starts now takes the server-level defaults: a
-- caller that did not send them is asked to ({'D'}).
if (reset or not m.owner) and not DEFAULTS_KNOWN then return { 'D' } end
-- The liveness token: a new one for a state that starts now, or for a
-- live state that has none yet (written before tokens).
local old_gen, old_unordered, gen = m.gen, m.unordered, nil
if reset or not m.owner or not m.gen then gen = plan_token(info) end
if reset or not m.owner then m = fresh_meta() end

local now = now_ms()
local dur_ms, maxsize = m.duration * 1000, m.maxsize
local nomk = NOMK == '1'
-- KEEPREF, DELREF and ACKED (Redis 8.2+) say what trimming does with
-- consumer groups' references: without trimming they change nothing and
-- go unsaid. With it they go to XADD where the server has them (COMMAND
-- INFO of XDELEX, 8.2's, answers quietly); elsewhere DELREF and ACKED
-- refuse a new entry where XADD would add it, after every reply Redis
-- gives first (WRONGTYPE, NOMKSTREAM's nil, a duplicate, which trims
-- nothing: R10).
local deletion, refusal = '', nil
if TRIM ~= '' and DELETION ~= '' then
  local r = redis.pcall('COMMAND', 'INFO', 'XDELEX')
  if type(r) == 'table' and type(r[1]) == 'table' then
    deletion = DELETION
  elseif DELETION ~= 'KEEPREF' then
    refusal = 'ERR ' .. DELETION .. ' with MAXLEN or MINID needs Redis 8.2 or later: this server trims as KEEPREF does'
  end
end
-- XADD's arguments before the fields, the same for every item.
local head = xadd_head(deletion)
head[#head + 1] = '*'
local nhead = #head

-- The commands part 2 runs, for the permission checks.
-- DEL is checked whether or not this call deletes: which calls drop an
-- idle producer's state is random, and a user refused at random is worse
-- than one refused at once.
local checks = { { 'XRANGE', STREAM, '-', '+' }, { 'HSET', META, 'f', 'v' }, { 'HINCRBY', META, 'f', '1' },
  { 'HDEL', META, 'f' }, { 'DEL', META }, { 'SADD', PIDS, 'm' }, { 'SREM', PIDS, 'm' }, { 'PERSIST', PIDS },
  { 'DEL', PIDS } }
local xa = { 'XADD' }
for i = 1, nhead do xa[i + 1] = head[i] end
xa[#xa + 1], xa[#xa + 2] = 'f', 'v'
checks[#checks + 1] = xa
-- (XGROUP CREATE of the token was checked by plan_token: a user who may
-- not goes without one.)

-- The state to drop when reset: other pids' keys and progress records
-- (read now: see plan_drop), and, when this call writes nothing, the rest.
local drop, whole
if reset then
  local mine, keep = {}, {}
  for j = 1, npids do mine[argv[ITEMS + 2 * j - 2]] = true end
  if batch then keep[PROGRESS] = true end
  drop = plan_drop(true, true, mine, keep)
  whole = { keys = {} }
  local seen = {}
  for _, k in ipairs({ META, PIDS, BATCH_INDEX, unpack(KEYS, PID_KEYS) }) do
    if not seen[k] and redis.call('EXISTS', k) == 1 then whole.keys[#whole.keys + 1] = k end
    seen[k] = true
  end
  if not batch and redis.call('EXISTS', BATCH_INDEX) == 1 then drop.keys[#drop.keys + 1] = BATCH_INDEX end
  drop_checks(drop, checks)
  drop_checks(whole, checks)
end

-- The chunk's progress record moves from FROM lines to TO with
-- the adds, compare-and-set: a chunk that was committed already (its reply
-- lost, or its connection stalled and given up) finds the record moved on.
local record_junk
if batch then
  local line = redis.call('HGET', PROGRESS, 'line') or '0'
  if reset then line = '0' end -- the record goes with the state
  if line ~= FROM then
    if not reset then return { 'P', line } end
    err = denied(checks)
    if err then return err end
    run_drop(drop, whole)
    return { 'P', '0' }
  end
  if reset then record_junk = redis.call('HKEYS', PROGRESS) end
  checks[#checks + 1] = { 'HSET', PROGRESS, 'f', 'v' }
  checks[#checks + 1] = { 'HDEL', PROGRESS, 'f' }
  checks[#checks + 1] = { 'PERSIST', PROGRESS }
  checks[#checks + 1] = { 'ZADD', BATCHES, '0', 'm' }
  checks[#checks + 1] = { 'ZREM', BATCHES, 'm' }
  checks[#checks + 1] = { 'PERSIST', BATCHES }
  checks[#checks + 1] = { 'DEL', PROGRESS }
end

-- Per pid: its expired iids (a prefix of its list, in entry order), and
-- what may matter to this call.
local per = {}
for j = 1, npids do
  local ids, order = KEYS[PID_KEYS + 2 * j - 2], KEYS[PID_KEYS + 2 * j - 1]
  local len = redis.call('LLEN', order)
  -- pushed[k] is the k-th iid this call pushes and newid[k] its entry ID;
  -- pos[iid] is the last position it was pushed at; cand[iid] the position
  -- of an old iid this call may evict (-inf: expired, gone whatever).
  local p = { ids = ids, order = order, pid = argv[ITEMS + 2 * j - 2], count = tonumber(argv[ITEMS + 2 * j - 1]), len = len,
    known = {}, pos = {}, cand = {}, pushed = {}, newid = {}, n = 0, front = {},
    had_ids = redis.call('EXISTS', ids) == 1 }
  if reset then
    p.expired, p.start = len, 0
    p.junk = redis.call('HKEYS', ids)
  else
    local e = 0
    if len > 0 then
      local id = redis.call('HGET', ids, redis.call('LINDEX', order, 0))
      if not (id and id_ms(id) + dur_ms > now) then e = len - live_count(ids, order, dur_ms, now, m.unordered) end
    end
    p.expired, p.start = e, len - e
    -- The old iids this call may pop: the expired ones, then those it can
    -- evict (the first start + count - maxsize of the others).
    local upto = e + math.max(0, math.min(p.start, p.start + p.count - maxsize))
    if upto > 0 then
      p.front = redis.call('LRANGE', order, 0, upto - 1)
      for i = 1, e do p.cand[p.front[i]] = -math.huge end
      for i = e + 1, upto do p.cand[p.front[i]] = i - 1 - e end
    end
  end
  per[j] = p
  checks[#checks + 1] = { 'RPUSH', order, 'x' }
  checks[#checks + 1] = { 'LTRIM', order, '0', '-1' }
  checks[#checks + 1] = { 'PERSIST', order }
  checks[#checks + 1] = { 'HSET', ids, 'f', 'v' }
  checks[#checks + 1] = { 'HDEL', ids, 'f' }
  checks[#checks + 1] = { 'PERSIST', ids }
  checks[#checks + 1] = { 'DEL', ids }
  checks[#checks + 1] = { 'DEL', order }
end
-- The iids each pid tracks that this call asks about: all of them when
-- they are few (a small hash is a listpack, where every HMGET field is a
-- scan), else one HMGET of the call's iids, gathered in a pass over the
-- items that only such pids need.
local asking = false
for j = 1, npids do
  local p = per[j]
  -- A reset state knows nothing.
  if not reset and (p.len <= 512 or p.len <= 2 * p.count) then
    p.known = to_table(redis.call('HGETALL', p.ids))
  elseif not reset then
    p.asked, asking = {}, true
  end
end
a = first
if asking then
  for _ = 1, nitems do
    if uniform then
      local l = per[1].asked
      l[#l + 1] = argv[a]
      a = a + 1 + uniform
    else
      local l = per[int(argv[a])].asked
      if l then l[#l + 1] = argv[a + 1] end
      a = a + 3 + int(argv[a + 2])
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

-- Idle producers: a few pids of the set whose newest iid has expired go,
-- so that the state stays bounded without TTLs. Their keys were not
-- declared: read here, and skipped when a read fails.
local idle = { keys = {}, pids = {} }
local members, scard = {}, 0
if not reset then
  local mine = {}
  for _, p in ipairs(per) do mine[p.pid] = true end
  for _, q in ipairs(redis.call('SRANDMEMBER', PIDS, 3)) do
    if not mine[q] then
      local ids, order = IDS_PREFIX .. q, ORDER_PREFIX .. q
      local last = redis.pcall('LINDEX', order, -1)
      local id = (type(last) == 'string') and redis.pcall('HGET', ids, last) or nil
      local hx, ox = redis.pcall('EXISTS', ids), redis.pcall('EXISTS', order)
      local readable = type(last) ~= 'table' and type(id) ~= 'table' and type(hx) == 'number' and type(ox) == 'number'
      if readable and not (type(id) == 'string' and id_ms(id) + dur_ms > now) then
        idle.pids[#idle.pids + 1] = q
        if hx == 1 then idle.keys[#idle.keys + 1] = ids end
        if ox == 1 then idle.keys[#idle.keys + 1] = order end
      end
    end
  end
  drop_checks(idle, checks)
  scard = redis.call('SCARD', PIDS)
end
for _, p in ipairs(per) do members[p.pid] = redis.call('SISMEMBER', PIDS, p.pid) == 1 end

err = denied(checks)
if err then return err end
if DRY == '1' then return { 'K' } end -- checked: nothing is added

------------------------------------------------------------------------
-- Part 2: the writes, none of which can fail: every key's type, every
-- argument and every permission was checked above. The adds come first,
-- each an XADD under pcall: one that fails (OOM or READONLY at the first
-- write, an exhausted ID space) stops the run, and what follows records
-- exactly the adds before it. Then what adds to the state; deletions last.
------------------------------------------------------------------------

-- The loop below runs once an item: globals it uses are made locals (a
-- global is a table lookup at every use).
local rpcall, xadd = redis.pcall, 'XADD'
local nadds, ndups, last_id = 0, 0, nil
local done, ndone, stop, message = {}, 0, '', ''
a = first
-- The current pid's state is kept in locals while items go on with the same
-- pid (a batch has one): a field of a table is a lookup at every use.
do
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
    if not exists and nomk then
      stop = 'n'
      break
    end
    -- List positions below evict are gone (R5): old ones, or pushed earlier
    -- here.
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
    elseif refusal then
      stop, message = 'e', refusal
      break
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
end

local replies = table.concat(done, ',')
if ndone == 0 then
  -- Nothing written: a reset state still goes (R13), deletions only.
  if reset then run_drop(drop, whole) end
  return { replies, stop, message }
end

-- Whether pushed position k of pid p is still tracked once the list's
-- positions below evict are gone (R5).
local function tracked(p, iid, evict)
  local k = p.pos[iid]
  return k ~= nil and p.start + k - 1 >= evict
end

-- What adds to the state: each pid's new iids, the pids set, the meta hash.
local npids_after = 0
if not reset then npids_after = scard - #idle.pids end
local adding = {}
for _, p in ipairs(per) do
  local n = p.n
  p.evict = p.start + n - maxsize
  if n > 0 then
    -- Of the iids pushed here, those beyond the evicted positions stay.
    local kfirst = math.max(1, p.evict - p.start + 1)
    local stay, keep = {}, {}
    for k = kfirst, n do
      local iid = p.pushed[k]
      stay[#stay + 1] = iid
      if p.pos[iid] == k then keep[#keep + 1], keep[#keep + 2] = iid, p.newid[k] end
    end
    bulk('RPUSH', p.order, stay)
    bulk('HSET', p.ids, keep)
    redis.call('PERSIST', p.order)
    redis.call('PERSIST', p.ids)
    adding[#adding + 1] = p.pid
    if reset or not members[p.pid] then npids_after = npids_after + 1 end
    p.had_ids = true
  end
  -- How many old iids go from the front of the list: expired, then evicted.
  p.pop = p.expired + math.max(0, math.min(p.start, p.evict))
  if n == 0 and p.pop == p.len and members[p.pid] and not reset then
    npids_after = npids_after - 1 -- emptied below
  end
end
if #adding > 0 then
  bulk('SADD', PIDS, adding)
  redis.call('PERSIST', PIDS)
end
local h = snapshot(info, last_id, nadds)
h[#h + 1], h[#h + 2] = 'pids', npids_after
if reset then
  h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'iids-added', nadds, 'iids-duplicates', ndups
end
if m.fresh then
  -- A state that starts now keeps the server-level defaults it started with.
  h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'duration', m.duration, 'maxsize', m.maxsize
end
-- The token, once the stream exists; the meta names it only if made.
local drop_gen = false
if gen and create_token(gen) then
  h[#h + 1], h[#h + 2] = 'gen', gen
elseif reset and old_gen then
  drop_gen = true -- the old stream's token: a new state without one
end
redis.call('HSET', META, unpack(h))
if not reset then
  if nadds > 0 then redis.call('HINCRBY', META, 'iids-added', nadds) end
  if ndups > 0 then redis.call('HINCRBY', META, 'iids-duplicates', ndups) end
end

-- The progress record counts the input lines whose adds are written: all of
-- the chunk's, or those up to the last item before one that stopped it (the
-- digest of those is not known here, so digest-line stays where it was).
-- The chunk's replies are kept for a client whose reply was lost; older
-- ones go (DROP). The record outlives its last chunk by PROGRESS_TTL ms:
-- the index scores it by that time, and xadd --batch drops it then.
local fresh = {}
if batch then
  local line = TO
  if ndone < nitems then
    local k = 0
    for l in string.gmatch(LINES, '[^,]+') do
      k = k + 1
      if k == ndone then line = l break end
    end
  end
  local expires = now + tonumber(PROGRESS_TTL)
  local r = { 'line', line, 'batch', BATCH_ID, 'pid', BATCH_PID, 'stream', OWNER, 'mode', 'emulated',
    'updated', now, 'expires', expires, 'run', RUN, 'r:' .. FROM, replies }
  if ndone == nitems then r[#r + 1], r[#r + 2], r[#r + 3], r[#r + 4] = 'digest', DIGEST, 'digest-line', TO end
  if FROM == '0' then r[#r + 1], r[#r + 2] = 'started', now end
  local ea = info and info['entries-added']
  if ea ~= nil then r[#r + 1], r[#r + 2] = 'entries', ea + nadds
  elseif info == nil then r[#r + 1], r[#r + 2] = 'entries', nadds end
  redis.call('HSET', PROGRESS, unpack(r))
  redis.call('PERSIST', PROGRESS)
  redis.call('ZADD', BATCHES, expires, PROGRESS)
  redis.call('PERSIST', BATCHES)
  for i = 1, #r, 2 do fresh[r[i]] = true end
end

-- Deletions last: no key is written after this point, and each key
-- touched exists (a cluster node refuses a missing one while the slot is
-- MIGRATING): the order list when it had iids to pop, the ids hash when it
-- existed or was written above, the pids set for its members.
local gone = {}
for _, p in ipairs(per) do
  local dropped = {}
  if p.pop > 0 then
    redis.call('LTRIM', p.order, p.pop, -1)
    local old = p.junk or p.front
    local last = p.junk and #old or p.pop
    for i = 1, last do
      local iid = old[i]
      if not tracked(p, iid, p.evict) then dropped[#dropped + 1] = iid end
    end
  elseif reset and p.n == 0 then
    dropped = p.junk
  end
  if p.had_ids then bulk('HDEL', p.ids, dropped) end
  if p.n == 0 and p.pop == p.len and members[p.pid] then gone[#gone + 1] = p.pid end
end
for _, q in ipairs(idle.pids) do gone[#gone + 1] = q end
if reset then
  for _, q in ipairs(drop.pids) do gone[#gone + 1] = q end
  if batch then
    local others = {}
    for _, k in ipairs(drop.records) do others[#others + 1] = k end
    bulk('ZREM', BATCHES, others)
  end
end
bulk('SREM', PIDS, gone)
-- The meta hash was written above, so it stays: its fields of the old
-- stream go.
if drop_gen then redis.call('HDEL', META, 'gen') end
if reset and old_unordered then redis.call('HDEL', META, 'unordered') end
if reset then run_drop(drop, idle) else run_drop(idle) end
if batch then
  local old = {}
  if DROP ~= '' then old[1] = 'r:' .. DROP end
  for _, f in ipairs(record_junk or {}) do
    if not fresh[f] then old[#old + 1] = f end
  end
  bulk('HDEL', PROGRESS, old)
end
return { replies, stop, message }
