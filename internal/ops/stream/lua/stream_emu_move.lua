-- Emulated IDMP state follows its stream through RENAME, RENAMENX and COPY,
-- as native IDMP does since Redis 8.6.2 (to another database, MOVE and
-- COPY ... DB: stream_emu_movedb.lua).
--
-- Arguments (moveArgs): the source stream's state (the common layout, so
-- the common helpers read the source); the same of the destination (DST,
-- DST_META, DST_PIDS, DST_IDS, DST_ORDER, DST_OWNER); OP: RENAME, RENAMENX
-- or COPY; REPLACE: '1' for COPY ... REPLACE; DB: COPY's DB ('' none).
-- Reply: the command's own reply. A key that is not a stream, or a stream
-- without emulated state, moves as the command moves it.
--
-- Two parts (stream_common.lua): part 1 reads every key part 2 touches
-- (a cluster node refuses a key it no longer holds there, before any
-- write) and checks every permission; part 2 runs the command, moves the
-- state keys, and deletes last: the destination's old state that the move
-- did not overwrite, and (RENAME) the source's progress records.

local DST_BATCHES = DST_META .. ':batches'
local op, replace, db = OP, REPLACE == '1', DB

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

local t = key_type(STREAM)
local cmd = { op, STREAM, DST }
if op == 'COPY' then
  if db ~= '' then cmd[#cmd + 1], cmd[#cmd + 2] = 'DB', db end
  if replace then cmd[#cmd + 1] = 'REPLACE' end
end
if redis.acl_check_cmd and not redis.acl_check_cmd(unpack(cmd)) then
  return redis.error_reply("NOPERM User has no permissions to run the '" .. string.lower(op) .. "' command")
end
local same = STREAM == DST
-- COPY checks the names before it looks the key up (Redis's copyCommand):
-- COPY k k is an error whether k exists or not. (COPY ... DB n of another
-- database goes to stream_emu_movedb.lua.)
if same and op == 'COPY' then
  return redis.error_reply('ERR source and destination objects are the same')
end
if t == 'none' then
  if op == 'COPY' then return 0 end
  return redis.error_reply('ERR no such key')
end
local dst_type = key_type(DST)
if op == 'RENAMENX' and dst_type ~= 'none' then return 0 end
if op == 'COPY' and dst_type ~= 'none' and not replace and db == '' then return 0 end
if same then
  if op == 'RENAMENX' then return 0 end
  return { ok = 'OK' }
end

-- The state keys, of the types part 2 expects.
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
if not err and db == '' then err = bad_type(DST_META, 'hash') or bad_type(DST_PIDS, 'set') end
if err then return err end
-- Two names whose state keys are the same ("s" and "{s}").
local shared = META == DST_META

-- The source's state, when it is a stream with live emulated state.
local carry = false
if t == 'stream' then
  local m = load_meta()
  if m.owner == OWNER and not stale(xinfo(), m) then carry = true end
end
if carry and db ~= '' then
  return redis.error_reply('ERR COPY to another database of a stream with emulated IDMP state is not emulated: copy within the database, or XADD the entries anew')
end
if carry and shared and op == 'COPY' then
  return redis.error_reply('ERR COPY of ' .. OWNER .. ' to ' .. DST_OWNER .. ' is not emulated: both names keep their IDMP state in ' ..
    META .. ', and a stream has one: copy to another name, or XADD the entries anew')
end
-- The destination's state belongs to another stream that shares its keys
-- (add refuses it the same way).
local dst_owner = db == '' and redis.call('HGET', DST_META, 'stream') or nil
if dst_owner and dst_owner ~= DST_OWNER and not (shared and dst_owner == OWNER) then
  return redis.error_reply('IDMPCONFLICT emulated IDMP state ' .. DST_META .. ' belongs to stream ' .. dst_owner)
end

-- What part 2 does: writes (the command, the state moves, the owner) in
-- order, then deletions. Every key is read here: under a MIGRATING slot a
-- key the node no longer holds fails the read, not a write.
local checks = {}
local moves = {}   -- {src, dst}: RENAME, or COPY ... REPLACE
local written = {} -- keys the moves write
local dels, seen = {}, {}
local function del(k)
  if not seen[k] and not written[k] and redis.call('EXISTS', k) == 1 then
    seen[k] = true
    dels[#dels + 1] = k
    checks[#checks + 1] = { 'DEL', k }
  end
end
-- A stream's whole state: its pids' keys, its progress records, its index.
local function drop_state(pids, ids, order, batches)
  for _, pid in ipairs(redis.call('SMEMBERS', pids)) do
    del(ids .. pid)
    del(order .. pid)
  end
  for _, k in ipairs(redis.call('ZRANGE', batches, 0, -1)) do del(k) end
  del(batches)
end
if carry and not shared then
  local function plan_move(src, dst)
    if redis.call('EXISTS', src) == 1 then
      redis.call('EXISTS', dst)
      moves[#moves + 1] = { src, dst }
      written[dst] = true
      if op == 'COPY' then
        checks[#checks + 1] = { 'COPY', src, dst, 'REPLACE' }
      else
        checks[#checks + 1] = { 'RENAME', src, dst }
      end
    end
  end
  for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
    plan_move(IDS_PREFIX .. pid, DST_IDS .. pid)
    plan_move(ORDER_PREFIX .. pid, DST_ORDER .. pid)
  end
  plan_move(PIDS, DST_PIDS)
  plan_move(META, DST_META)
end
if carry then
  checks[#checks + 1] = { 'HSET', DST_META, 'stream', DST_OWNER }
  written[DST_META] = true
end
-- The destination's old state (COPY to another database leaves this
-- one's alone): what the moves do not overwrite goes.
if db == '' then
  if shared then
    -- One state: kept when carried, else it goes with the source's.
    if not carry then
      drop_state(PIDS, IDS_PREFIX, ORDER_PREFIX, BATCH_INDEX)
      del(META)
      del(PIDS)
    end
  else
    drop_state(DST_PIDS, DST_IDS, DST_ORDER, DST_BATCHES)
    del(DST_META)
    del(DST_PIDS)
  end
end
-- A batch's progress record is of the stream under its old name: a run
-- under the new name starts over (its adds dedupe while IDMP tracks them).
if carry and op ~= 'COPY' then
  for _, k in ipairs(redis.call('ZRANGE', BATCH_INDEX, 0, -1)) do del(k) end
  del(BATCH_INDEX)
end
err = denied(checks)
if err then return err end

------------------------------------------------------------------------
-- Part 2: the writes, none of which can fail; deletions last.
------------------------------------------------------------------------

local reply = redis.call(unpack(cmd))
for _, mv in ipairs(moves) do
  if op == 'COPY' then redis.call('COPY', mv[1], mv[2], 'REPLACE') else redis.call('RENAME', mv[1], mv[2]) end
end
if carry then redis.call('HSET', DST_META, 'stream', DST_OWNER) end
for i = 1, #dels, 1000 do
  redis.call('DEL', unpack(dels, i, math.min(i + 999, #dels)))
end
return reply
