-- xadd --batch on a server with native IDMP (Redis 8.6+): one chunk's adds
-- (XADD ... IDMP, or IDMPAUTO) and the move of its progress record, in one
-- script call: the server's own tracking dedupes, the script tells each
-- add's outcome and moves the record compare-and-set, as the emulated
-- script does for its chunks (see batch.go).
--
-- Arguments (nativeBatchArgs in batch_native_script.go): STREAM, the
-- batch's PROGRESS record, the stream's index of progress records
-- (BATCHES), the META hash and PIDS set of emulated IDMP state
-- (idmp.StateLayout.Meta, PIDs), which are only read.
-- The chunk's progress: FROM lines done before it, TO lines done after it,
-- the DIGEST of those lines, DROP the lines done before the chunk whose
-- kept replies go now ('' none), PROGRESS_TTL how long the record outlives
-- this chunk in ms, the BATCH_ID, its BATCH_PID, each item's input line
-- (LINES, joined by commas: read only when an item stops the chunk), and
-- the RUN that sends it.
-- NOMK ('1'|''), TRIM ('MAXLEN'|'MINID'|''), TRIM_OP '='|'~', THRESHOLD,
-- LIMIT (''|n), for every item; AUTO '1' for IDMPAUTO (the items carry no
-- iid), else ''.
-- NPIDS, then from ARGV[ITEMS] the pids; then nitems; then the items' shape,
-- three arguments: when every item is of the one pid and has the same
-- number of field/value arguments, that number, and '1' when every item
-- has the same field names too (the common batch: they then come once, and
-- each item carries its values only), else ''; and '1' when the items come
-- packed, else ''. Then, for shared names, the names. Then the items:
-- packed (one pid, and every string shorter than 255 bytes), two
-- arguments: every item's strings ([iid,] values... or fields...) one
-- after the other, and their lengths, a byte each (an argument a string
-- costs the server more than the string.sub that cuts it out of one);
-- else per item: [iid,] values... (shared names), [iid,] fields... (one
-- pid), or ('', '', '') pid index, [iid,] nfields, fields...
--
-- Reply: {done, stop, message[, 'u']}: done is the items written,
-- comma-separated, each its new ID, or 'd', 0|1 (the original entry still
-- exists) and the original's ID (the format of the emulated script, which
-- the progress record keeps too); stop is '' when every item was done,
-- else why the next one stopped the chunk: 'n' no stream (NOMKSTREAM), 'e'
-- an error (message). Items before a stop stay written. 'u': the server's
-- counters do not agree with the outcomes told (see part 2): the adds and
-- the record's move stand, their outcomes are not known.
-- Refusals, with nothing written: {'P', lines} the progress record stands
-- at another line count; {'E'} the stream has emulated IDMP state (META
-- or PIDS exists, as the guard tells it: a state whose settings hash was
-- evicted still dedupes what is left; iids it knows would not dedupe
-- natively, so the caller takes a path that guards them); {'F', item, nfields} an item has more
-- field/value arguments than one XADD from Lua can take (MAX_FIELD_ARGS);
-- and the errors of part 1.
--
-- Telling a duplicate: Redis replies the same ID for a new entry and a
-- duplicate. The stream's entries-added and iids-duplicates, read before
-- and after the adds, say how many of each the chunk made: when it made no
-- duplicate (the common chunk) every add is new, and no reply needs a
-- look. Otherwise each reply is looked at: inside a script the server's
-- clock stands still (TIME and the IDs that * generates use one snapshot),
-- so the ID a new add gets is known before it is made, the next after the
-- stream's last-generated-id at that snapshot; an add that replies exactly
-- that ID made it, any other reply is the original of a duplicate (whose
-- ID is at most the last-generated-id: after DEL the stream and its
-- tracking are gone, XTRIM and XDEL keep the last ID, an explicit ID moves
-- it up, and XSETID cannot set it below an entry or a deleted one's ID).
-- The counters must agree with the outcomes so told: they do not when the
-- stream's last ID was set back with XSETID below the ID of a trimmed
-- entry whose iid is still tracked, so that a duplicate replies the very ID
-- * generates next; then the reply says 'u'. (Where such a set-back also
-- lets a new entry take the ID of a trimmed original, the two replies are
-- the same ID and the counters the same counts: only XINFO around each
-- add, as the MULTI path reads it, tells them apart.)

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

local argv = ARGV
local function malformed()
  return redis.error_reply('ERR idmpctl: malformed native batch call (' .. #KEYS .. ' keys, ' .. #argv .. ' arguments)')
end
local npids = tonumber(NPIDS)
if not npids or npids < 1 or not tonumber(FROM) or not tonumber(PROGRESS_TTL) then
  return malformed()
end
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
local nid = auto and 0 or 1 -- arguments of an item's iid
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
local nargv = #argv
local sub, byte = string.sub, string.byte
local a = first
if packed then
  -- The strings and their lengths: as many as the items have, adding up
  -- to the strings' bytes.
  local big, lens = argv[first], argv[first + 1]
  local m = nid + nvals -- strings an item
  if nargv ~= first + 1 or not lens or #lens ~= nitems * m or uniform < 2 or uniform % 2 ~= 0 then return malformed() end
  if uniform > MAX_FIELD_ARGS then return { 'F', '1', tostring(uniform) } end
  local total = 0
  for k = 1, #lens, 4000 do
    local l = { byte(lens, k, math.min(k + 3999, #lens)) }
    for j = 1, #l do
      local n = l[j]
      if n == 255 then return malformed() end
      if n == 0 and nid == 1 and (k + j - 2) % m == 0 then
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
    a = a + nid + nvals
  else
    j, iid, nf = tonumber(argv[a]), argv[a + 1], tonumber(argv[a + 1 + nid] or '')
    if not j or not nf then return malformed() end
    a = a + 2 + nid + nf
  end
  if j < 1 or j > npids or nf < 2 or nf % 2 ~= 0 or a - 1 > nargv then return malformed() end
  if nf > MAX_FIELD_ARGS then return { 'F', tostring(i), tostring(nf) } end
  if not auto and iid == '' then return redis.error_reply('ERR IDMP requires a non-empty idempotent ID') end
end
if a - 1 ~= nargv then return malformed() end

local function key_type(key)
  return redis.call('TYPE', key)['ok']
end
local t = key_type(STREAM)
if t ~= 'none' and t ~= 'stream' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
for _, kt in ipairs({ { PROGRESS, 'hash' }, { BATCHES, 'zset' } }) do
  local have = key_type(kt[1])
  if have ~= 'none' and have ~= kt[2] then
    return redis.error_reply('WRONGTYPE ' .. kt[1] .. ' holds a ' .. have .. ', not the ' .. kt[2] ..
      ' of a batch\'s progress: nothing was written')
  end
end
-- Emulated state of the stream: the caller guards its iids.
if redis.call('EXISTS', META, PIDS) > 0 then return { 'E' } end
-- The record moves from FROM lines to TO, compare-and-set: a chunk
-- that was committed already (its reply lost, or its connection stalled and
-- given up), or one of another run, finds it moved on.
local line = redis.call('HGET', PROGRESS, 'line') or '0'
if line ~= FROM then return { 'P', line } end
local nomk = NOMK == '1'
if t == 'none' and nomk then return { '', 'n', '' } end

-- XADD's arguments before the pid, the same for every item.
local head = xadd_head('')
head[#head + 1] = auto and 'IDMPAUTO' or 'IDMP'
local nhead = #head

-- The commands part 2 runs, for the permission checks.
if redis.acl_check_cmd then
  local xa = { 'XADD' }
  for i = 1, nhead do xa[i + 1] = head[i] end
  xa[#xa + 1] = argv[ITEMS]
  if not auto then xa[#xa + 1] = 'i' end
  xa[#xa + 1], xa[#xa + 2], xa[#xa + 3] = '*', 'f', 'v'
  local checks = { xa, { 'XRANGE', STREAM, '-', '+' }, { 'XINFO', 'STREAM', STREAM },
    { 'HSET', PROGRESS, 'f', 'v' }, { 'HDEL', PROGRESS, 'f' }, { 'PERSIST', PROGRESS },
    { 'ZADD', BATCHES, '0', 'm' }, { 'PERSIST', BATCHES } }
  for _, c in ipairs(checks) do
    if not redis.acl_check_cmd(unpack(c)) then
      return redis.error_reply('NOPERM this user has no permission to run the ' .. c[1] .. ' command on key ' ..
        (c[1] == 'XINFO' and c[3] or c[2]) .. ', which xadd --batch needs: nothing was written')
    end
  end
end

-- The stream before the adds: its last ID, and the counters that check
-- the outcomes told.
local last, added0, dups0 = '0-0', 0, 0
if t == 'stream' then
  local info = to_table(redis.call('XINFO', 'STREAM', STREAM))
  last, added0, dups0 = info['last-generated-id'], info['entries-added'], info['iids-duplicates']
end
local now = now_ms()

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

------------------------------------------------------------------------
-- Part 2: the adds, each an XADD under pcall: one that fails (OOM at the
-- first write, an exhausted ID space) stops the chunk, and the record
-- counts exactly the adds before it. Then the record, which cannot fail:
-- its type, the arguments and every permission were checked above, and a
-- script past its first write is not refused for memory.
------------------------------------------------------------------------

local rpcall, xadd, rtype = redis.pcall, 'XADD', type
local ids, ndone, stop, message = {}, 0, '', ''
-- stopped says why an add replied no ID.
local function stopped(r)
  if r then stop, message = 'e', r.err else stop = 'n' end
end
local plain = nhead == 2 and not auto -- IDMP, no options
a = first
if packed then
  local big, lens = argv[first], argv[first + 1]
  local pos, k = 1, 1
  local pid = argv[ITEMS]
  if plain and named and uniform == 4 then
    -- The common batch, without a test or a table an item: an iid and two
    -- values, for two field names alike.
    local n1, n2 = names[1], names[2]
    for i = 1, nitems do
      local l1, l2, l3 = byte(lens, k, k + 2)
      local e1 = pos + l1
      local e2 = e1 + l2
      local e3 = e2 + l3
      local id = rpcall(xadd, STREAM, 'IDMP', pid, sub(big, pos, e1 - 1), '*', n1, sub(big, e1, e2 - 1), n2, sub(big, e2, e3 - 1))
      if rtype(id) ~= 'string' then
        stopped(id)
        break
      end
      ids[i], ndone, pos, k = id, i, e3, k + 3
    end
  elseif plain and named and uniform == 2 then
    local n1 = names[1]
    for i = 1, nitems do
      local l1, l2 = byte(lens, k, k + 1)
      local e1 = pos + l1
      local e2 = e1 + l2
      local id = rpcall(xadd, STREAM, 'IDMP', pid, sub(big, pos, e1 - 1), '*', n1, sub(big, e1, e2 - 1))
      if rtype(id) ~= 'string' then
        stopped(id)
        break
      end
      ids[i], ndone, pos, k = id, i, e2, k + 2
    end
  else
    local function cut()
      local e = pos + byte(lens, k)
      local v = sub(big, pos, e - 1)
      pos, k = e, k + 1
      return v
    end
    for i = 1, nitems do
      local args = { unpack(head) }
      local j = nhead + 1
      args[j] = pid
      if not auto then
        j = j + 1
        args[j] = cut()
      end
      j = j + 1
      args[j] = '*'
      if named then
        for v = 1, nvals do
          args[j + 2 * v - 1], args[j + 2 * v] = names[v], cut()
        end
      else
        for f = 1, uniform do args[j + f] = cut() end
      end
      local id = rpcall(xadd, unpack(args))
      if rtype(id) ~= 'string' then
        stopped(id)
        break
      end
      ids[i], ndone = id, i
    end
  end
elseif plain and named and uniform == 4 then
  -- The common batch, without a test or a table an item: two fields named
  -- alike.
  local pid, n1, n2 = argv[ITEMS], names[1], names[2]
  for i = 1, nitems do
    local id = rpcall(xadd, STREAM, 'IDMP', pid, argv[a], '*', n1, argv[a + 1], n2, argv[a + 2])
    if rtype(id) ~= 'string' then
      stopped(id)
      break
    end
    ids[i], ndone, a = id, i, a + 3
  end
elseif plain and named and uniform == 2 then
  local pid, n1 = argv[ITEMS], names[1]
  for i = 1, nitems do
    local id = rpcall(xadd, STREAM, 'IDMP', pid, argv[a], '*', n1, argv[a + 1])
    if rtype(id) ~= 'string' then
      stopped(id)
      break
    end
    ids[i], ndone, a = id, i, a + 2
  end
else
  for i = 1, nitems do
    local pid, iid, nf, f0
    if uniform then
      pid, nf = argv[ITEMS], uniform
      if auto then f0 = a else iid, f0 = argv[a], a + 1 end
    else
      pid = argv[ITEMS + tonumber(argv[a]) - 1]
      if auto then nf, f0 = tonumber(argv[a + 1]), a + 2 else iid, nf, f0 = argv[a + 1], tonumber(argv[a + 2]), a + 3 end
    end
    local args = { unpack(head) }
    args[nhead + 1] = pid
    local k = nhead + 1
    if not auto then
      k = k + 1
      args[k] = iid
    end
    args[k + 1] = '*'
    k = k + 1
    if named then
      for v = 1, nvals do
        args[k + 2 * v - 1], args[k + 2 * v] = names[v], argv[f0 + v - 1]
      end
      a = f0 + nvals
    else
      for f = f0, f0 + nf - 1 do args[k + 1 + f - f0] = argv[f] end
      a = f0 + nf
    end
    local id = rpcall(xadd, unpack(args))
    if rtype(id) ~= 'string' then
      stopped(id)
      break
    end
    ids[i], ndone = id, i
  end
end
if ndone == 0 then return { '', stop, message } end

-- Which adds were new: all, when the counters say so (the common case,
-- told without a look at each reply); else by the rule above, checked
-- against the counters.
local info = to_table(redis.call('XINFO', 'STREAM', STREAM))
local added1, dups1 = info['entries-added'], info['iids-duplicates']
local nadds, ndups = added1 - added0, dups1 - dups0
local done, unsure = ids, false
if nadds ~= ndone or ndups ~= 0 then
  done = {}
  local n, expect = 0, next_id(last)
  for i = 1, ndone do
    if ids[i] == expect then
      n, done[i], expect = n + 1, ids[i], next_id(ids[i])
    else
      done[i] = false
    end
  end
  unsure = n ~= nadds or ndone - n ~= ndups
  for i = 1, ndone do
    if not done[i] then
      local still = 0
      if #redis.call('XRANGE', STREAM, ids[i], ids[i]) > 0 then still = 1 end
      done[i] = 'd' .. still .. ids[i]
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
local upto = TO
if ndone < nitems then
  local k = 0
  for l in string.gmatch(LINES, '[^,]+') do
    k = k + 1
    if k == ndone then
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
if unsure then return { replies, stop, message, 'u' } end
return { replies, stop, message }
