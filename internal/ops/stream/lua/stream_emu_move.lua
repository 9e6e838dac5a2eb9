-- Emulated IDMP state follows its stream through RENAME, RENAMENX and COPY,
-- as native IDMP does since Redis 8.6.2 (MOVE: see below).
--
-- KEYS[1..3]: source stream, its meta hash and pids set (the common
-- layout, so the common helpers read the source); KEYS[4..6]: the same of
-- the destination. ARGV[1..3]: the source's ids prefix, order prefix and
-- name; ARGV[4..6]: the destination's; ARGV[7]: RENAME, RENAMENX, COPY or MOVE;
-- ARGV[8]: '1' for COPY ... REPLACE; ARGV[9]: COPY's DB ('' none), MOVE's db.
-- Reply: the command's own reply. A key that is not a stream, or a stream
-- without emulated state, moves as the command moves it.

local DST, DST_META, DST_PIDS = KEYS[4], KEYS[5], KEYS[6]
local DST_IDS, DST_ORDER, DST_OWNER = ARGV[4], ARGV[5], ARGV[6]
local op, replace, db = ARGV[7], ARGV[8] == '1', ARGV[9]

-- MOVE key db (the destination is the source): the state's keys would stay
-- in this database, so a stream that has live state is refused, as COPY
-- to another database is; any other key moves (MOVE's own errors as they
-- are, a db that is no integer first).
if op == 'MOVE' then
  if string.match(db, '^%-?%d+$') and key_type(STREAM) == 'stream' then
    local m = load_meta()
    if m.owner == OWNER and not stale(xinfo(), m) then
      return redis.error_reply('ERR MOVE of a stream with emulated IDMP state is not emulated: its state stays in this database (XADD the entries anew in the other)')
    end
  end
  return redis.pcall('MOVE', STREAM, db)
end

-- Checks: everything that can fail, before any write.
local t = key_type(STREAM)
local cmd = { op, STREAM, DST }
if op == 'COPY' then
  if db ~= '' then cmd[#cmd + 1], cmd[#cmd + 2] = 'DB', db end
  if replace then cmd[#cmd + 1] = 'REPLACE' end
end
if redis.acl_check_cmd and not redis.acl_check_cmd(unpack(cmd)) then
  return redis.error_reply("NOPERM User has no permissions to run the '" .. string.lower(op) .. "' command")
end
if t == 'none' then
  if op == 'COPY' then return 0 end
  return redis.error_reply('ERR no such key')
end
local same = STREAM == DST
if same and op == 'COPY' then
  return redis.error_reply('ERR source and destination objects are the same')
end
local dst_type = key_type(DST)
if op == 'RENAMENX' and dst_type ~= 'none' then return 0 end
if op == 'COPY' and dst_type ~= 'none' and not replace and db == '' then return 0 end
if same then
  if op == 'RENAMENX' then return 0 end
  return { ok = 'OK' }
end

-- The source's state, when it is a stream with live emulated state.
local carry = false
if t == 'stream' then
  local m = load_meta()
  if m.owner == OWNER and not stale(xinfo(), m) then carry = true end
end
if carry and db ~= '' then
  return redis.error_reply('ERR COPY to another database of a stream with emulated IDMP state is not emulated: copy within the database, or XADD the entries anew')
end
local src_pids = {}
if carry then src_pids = redis.call('SMEMBERS', PIDS) end
-- The commands the writes run, on the state keys (whose names the
-- destination's prefix shares).
do
  local move = op == 'COPY' and { 'COPY', META, DST_META, 'REPLACE' } or { 'RENAME', META, DST_META }
  local refused = denied({ move, { 'DEL', DST_META }, { 'DEL', DST_IDS .. 'p', DST_ORDER .. 'p' },
    { 'ZRANGE', DST_META .. ':batches', '0', '-1' }, { 'ZRANGE', BATCH_INDEX, '0', '-1' }, { 'DEL', BATCH_INDEX },
    { 'EXISTS', META }, { 'HSET', DST_META, 'stream', DST_OWNER } })
  if refused then return refused end
end

-- Writes. The destination's old state goes first, except the keys the
-- move overwrites (a key deleted here is never written again).
local moving = {}
for _, pid in ipairs(src_pids) do moving[pid] = true end
-- (COPY to another database leaves this one's destination alone.)
if db == '' and (redis.call('HGET', DST_META, 'stream') == DST_OWNER or redis.call('EXISTS', DST_PIDS) == 1) then
  for _, pid in ipairs(redis.call('SMEMBERS', DST_PIDS)) do
    if not moving[pid] then redis.call('DEL', DST_IDS .. pid, DST_ORDER .. pid) end
  end
  local batches = DST_META .. ':batches'
  for _, k in ipairs(redis.call('ZRANGE', batches, 0, -1)) do redis.call('DEL', k) end
  redis.call('DEL', batches)
  if not carry then redis.call('DEL', DST_META, DST_PIDS) end
end

local reply = redis.call(unpack(cmd))
if not carry then return reply end

-- RENAME and COPY keep each key's TTL: the state expires as it would have.
local move = function(src, dst)
  if redis.call('EXISTS', src) == 1 then
    if op == 'COPY' then redis.call('COPY', src, dst, 'REPLACE') else redis.call('RENAME', src, dst) end
  end
end
for _, pid in ipairs(src_pids) do
  move(IDS_PREFIX .. pid, DST_IDS .. pid)
  move(ORDER_PREFIX .. pid, DST_ORDER .. pid)
end
move(PIDS, DST_PIDS)
move(META, DST_META)
redis.call('HSET', DST_META, 'stream', DST_OWNER)
if op ~= 'COPY' then
  -- A batch's progress record is of the stream under its old name: a run
  -- under the new name starts over (its adds dedupe while IDMP tracks them).
  local batches = META .. ':batches'
  for _, k in ipairs(redis.call('ZRANGE', batches, 0, -1)) do redis.call('DEL', k) end
  redis.call('DEL', batches)
end
return reply
