-- Emulated purge --stream: forget tracked iids of every pid (PID '') or of
-- one pid (PID, with its keys from KEYS[PID_KEYS]; clearArgs). Settings and
-- lifetime counters stay. Reply: live iids cleared, or nil when the stream
-- does not exist (its leftover state is dropped then).

-- Part 1: everything that can fail.
local pid = PID
local IDS, ORDER = KEYS[PID_KEYS], KEYS[PID_KEYS + 1]
if (pid == '' and #KEYS ~= PID_KEYS - 1) or (pid ~= '' and #KEYS ~= PID_KEYS + 1) then
  return redis.error_reply('ERR idmpctl: malformed emulated clear call')
end
local t = key_type(STREAM)
if t ~= 'none' and t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
if not err and pid ~= '' then err = bad_type(IDS, 'hash') or bad_type(ORDER, 'list') end
if err then return err end
local m = load_meta()
err = conflict(m)
if err then return err end

-- The whole state of a stream that is gone or was recreated (R13): it goes.
local function drop_all()
  local plan = plan_drop(true, true, {}, {})
  for _, k in ipairs({ META, PIDS, BATCH_INDEX }) do
    if redis.call('EXISTS', k) == 1 then plan.keys[#plan.keys + 1] = k end
  end
  return plan
end
if t == 'none' then
  local plan = drop_all()
  err = denied(drop_checks(plan, {}))
  if err then return err end
  run_drop(plan)
  return false
end
if stale(xinfo(), m) then
  local plan = drop_all()
  err = denied(drop_checks(plan, {}))
  if err then return err end
  run_drop(plan)
  return 0
end

local now, dur_ms = now_ms(), m.duration * 1000
local cleared, left = 0, 0
local plan
if pid == '' then
  for _, p in ipairs(redis.call('SMEMBERS', PIDS)) do
    cleared = cleared + live_count(IDS_PREFIX .. p, ORDER_PREFIX .. p, dur_ms, now, m.unordered)
  end
  plan = plan_drop(true, false, {}, {})
  if redis.call('EXISTS', PIDS) == 1 then plan.keys[#plan.keys + 1] = PIDS end
else
  cleared = live_count(IDS, ORDER, dur_ms, now, m.unordered)
  plan = { keys = {} }
  for _, k in ipairs({ IDS, ORDER }) do
    if redis.call('EXISTS', k) == 1 then plan.keys[#plan.keys + 1] = k end
  end
  left = redis.call('SCARD', PIDS) - redis.call('SISMEMBER', PIDS, pid)
end
local checks = drop_checks(plan, { { 'SREM', PIDS, 'm' } })
if m.owner then checks[#checks + 1] = { 'HSET', META, 'f', 'v' } end
if m.owner and pid == '' and m.unordered then checks[#checks + 1] = { 'HDEL', META, 'f' } end
err = denied(checks)
if err then return err end

-- Part 2: the meta hash's count of pids, then the deletions (with every
-- pid's iids, the order of none is in question).
if m.owner then redis.call('HSET', META, 'pids', left) end
if m.owner and pid == '' and m.unordered then redis.call('HDEL', META, 'unordered') end
run_drop(plan)
if pid ~= '' then redis.call('SREM', PIDS, pid) end
return cleared
