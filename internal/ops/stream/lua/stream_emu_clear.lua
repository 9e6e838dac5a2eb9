-- Emulated purge --stream: forget tracked iids of every pid (ARGV[4] = '')
-- or of one pid (ARGV[4] = pid; KEYS[4], KEYS[5] its keys). Settings and
-- lifetime counters stay. Reply: live iids cleared, or nil when the stream
-- does not exist (its leftover state is dropped then).

local m, early = open_existing(false)
if not m then return early end
if stale(xinfo(), m) then
  drop_state(false)
  return 0
end

local now, dur_ms, pid = now_ms(), m.duration * 1000, ARGV[4]
if pid == '' then
  local cleared = 0
  for _, p in ipairs(redis.call('SMEMBERS', PIDS)) do
    cleared = cleared + live_count(IDS_PREFIX .. p, ORDER_PREFIX .. p, dur_ms, now)
  end
  drop_state(true)
  return cleared
end
local cleared = live_count(KEYS[4], KEYS[5], dur_ms, now)
redis.call('DEL', KEYS[4], KEYS[5])
redis.call('SREM', PIDS, pid)
return cleared
