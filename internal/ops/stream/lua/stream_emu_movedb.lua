-- Emulated IDMP state follows its stream to another database: MOVE key db,
-- and COPY key dst DB db [REPLACE], as native IDMP does (R15).
--
-- Arguments (moveDBArgs): the source stream's state; the destination's
-- (DST, DST_META, DST_PIDS, DST_IDS, DST_ORDER, DST_OWNER; MOVE: the
-- source's names), which live in database DB; OP: MOVE or COPY; REPLACE:
-- '1' for COPY ... REPLACE; DB; FROM_DB: the database the caller's
-- connection is in (exec follows its SELECTs; the script checks it, and
-- refuses when it is not where the stream is). Reply: the command's own.
--
-- A key that is not a stream, or a stream without live emulated state,
-- moves as the command moves it. Otherwise part 1 reads both databases
-- (SELECT there and back: in a script it changes nothing for the caller),
-- and part 2 runs the command, copies each state key with COPY ... DB db
-- REPLACE, deletes the source's (MOVE), and last, in db, the
-- destination's old state that the copies did not overwrite. A batch's
-- progress records stay behind, as with RENAME: a run against the other
-- database starts over (its adds dedupe while IDMP tracks them).

local op, replace, db, from = OP, REPLACE == '1', DB, FROM_DB

local cmd = { 'MOVE', STREAM, db }
if op == 'COPY' then
  cmd = { 'COPY', STREAM, DST, 'DB', db }
  if replace then cmd[#cmd + 1] = 'REPLACE' end
end

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

-- A stream with live emulated state, or the command alone (its own
-- errors, a db that is no integer first; one write).
local m, before = nil, nil
if key_type(STREAM) == 'stream' and string.match(db, '^%d+$') then
  m = load_meta()
  before = xinfo()
  if m.owner ~= OWNER or stale(before, m) then m = nil end
end
if not m then return redis.pcall(unpack(cmd)) end
if redis.acl_check_cmd and not redis.acl_check_cmd(unpack(cmd)) then
  return redis.error_reply("NOPERM User has no permissions to run the '" .. string.lower(op) .. "' command")
end
if redis.acl_check_cmd and not (redis.acl_check_cmd('SELECT', db) and redis.acl_check_cmd('SELECT', from)) then
  return redis.error_reply('NOPERM this user has no permission to run the SELECT command, which emulated IDMP needs to take ' ..
    'the state to database ' .. db .. ': nothing was written')
end

-- The caller's database, checked: the same stream, the same state.
local function same_stream()
  if key_type(STREAM) ~= 'stream' then return false end
  local now = xinfo()
  return now['last-generated-id'] == before['last-generated-id'] and now['entries-added'] == before['entries-added']
    and now['length'] == before['length'] and (redis.call('HGET', META, 'gen') or '') == (m.gen or '')
    and redis.call('HGET', META, 'snap-id') == (m.snap_id or false)
end
local sel = redis.pcall('SELECT', from)
if (type(sel) == 'table' and sel.err) or not same_stream() then
  return redis.error_reply('ERR idmpctl: ' .. op .. ' of a stream with emulated IDMP state needs the database the connection is in, ' ..
    'which a SELECT that failed or one in a transaction hides: ' .. op .. ' it again outside the transaction')
end
if tonumber(db) == tonumber(from) then
  if op == 'MOVE' then return redis.pcall(unpack(cmd)) end -- source and destination objects are the same
  return redis.error_reply('ERR idmpctl: COPY ... DB of the database the connection is in: COPY without DB')
end

-- The source's state keys and where each goes.
local copies = {} -- {src, dst}
local function plan_copy(src, dst)
  if redis.call('EXISTS', src) == 1 then copies[#copies + 1] = { src, dst } end
end
for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
  plan_copy(IDS_PREFIX .. pid, DST_IDS .. pid)
  plan_copy(ORDER_PREFIX .. pid, DST_ORDER .. pid)
end
plan_copy(PIDS, DST_PIDS)
plan_copy(META, DST_META)
local sources = {} -- MOVE: every source key goes, records too
if op == 'MOVE' then
  for _, c in ipairs(copies) do sources[#sources + 1] = c[1] end
  for _, k in ipairs(redis.call('ZRANGE', BATCH_INDEX, 0, -1)) do
    if redis.call('EXISTS', k) == 1 then sources[#sources + 1] = k end
  end
  if redis.call('EXISTS', BATCH_INDEX) == 1 then sources[#sources + 1] = BATCH_INDEX end
end

-- In db: the destination must be free (else the command answers 0 and
-- does nothing), and its old state (of a stream gone from there) goes.
local target = redis.pcall('SELECT', db)
if type(target) == 'table' and target.err then
  redis.call('SELECT', from)
  return redis.pcall(unpack(cmd)) -- the command's own error (DB index is out of range)
end
if redis.call('EXISTS', DST) == 1 and not (op == 'COPY' and replace) then return 0 end
local written = {}
for _, c in ipairs(copies) do written[c[2]] = true end
local olds, seen = {}, {}
local function old(k)
  if not seen[k] and not written[k] and redis.call('EXISTS', k) == 1 then
    seen[k] = true
    olds[#olds + 1] = k
  end
end
local dst_batches = DST_META .. ':batches'
if key_type(DST_PIDS) == 'set' then
  for _, pid in ipairs(redis.call('SMEMBERS', DST_PIDS)) do
    old(DST_IDS .. pid)
    old(DST_ORDER .. pid)
  end
end
if key_type(dst_batches) == 'zset' then
  for _, k in ipairs(redis.call('ZRANGE', dst_batches, 0, -1)) do old(k) end
end
old(dst_batches)
old(DST_META)
old(DST_PIDS)
redis.call('SELECT', from)

local checks = {}
for _, c in ipairs(copies) do checks[#checks + 1] = { 'COPY', c[1], c[2], 'DB', db, 'REPLACE' } end
for _, k in ipairs(sources) do checks[#checks + 1] = { 'DEL', k } end
for _, k in ipairs(olds) do checks[#checks + 1] = { 'DEL', k } end
if op == 'COPY' then checks[#checks + 1] = { 'HSET', DST_META, 'stream', DST_OWNER } end
local err = denied(checks)
if err then return err end

------------------------------------------------------------------------
-- Part 2: the writes, none of which can fail; deletions last.
------------------------------------------------------------------------

local reply = redis.call(unpack(cmd))
for _, c in ipairs(copies) do redis.call('COPY', c[1], c[2], 'DB', db, 'REPLACE') end
for i = 1, #sources, 1000 do
  redis.call('DEL', unpack(sources, i, math.min(i + 999, #sources)))
end
redis.call('SELECT', db)
if op == 'COPY' then redis.call('HSET', DST_META, 'stream', DST_OWNER) end
for i = 1, #olds, 1000 do
  redis.call('DEL', unpack(olds, i, math.min(i + 999, #olds)))
end
return reply
