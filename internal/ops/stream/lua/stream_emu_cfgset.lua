-- Emulated XCFGSET (R7). ARGV[4] = duration, ARGV[5] = maxsize ('0' keeps).
-- Reply: {before-duration, before-maxsize, after-duration, after-maxsize,
-- changed (0|1), iids cleared}. Same values change and clear nothing.

local m, early = open_existing(redis.error_reply('ERR no such key'))
if not m then return early end

local d, n = tonumber(ARGV[4]), tonumber(ARGV[5])
if d == nil or n == nil then return redis.error_reply('ERR value is not an integer or out of range') end
if d == 0 and n == 0 then
  return redis.error_reply('ERR At least one parameter (IDMP-DURATION or IDMP-MAXSIZE) must be given')
end
if d < 0 or d > MAX_DURATION then return redis.error_reply('ERR IDMP-DURATION must be between 1 and ' .. MAX_DURATION) end
if n < 0 or n > MAX_MAXSIZE then return redis.error_reply('ERR IDMP-MAXSIZE must be between 1 and ' .. MAX_MAXSIZE) end

local info = xinfo()
if stale(info, m) then
  drop_state(false)
  m = fresh_meta()
elseif not m.owner then
  m = fresh_meta() -- no state yet: the other setting is the server-level default
end
local ad, am = m.duration, m.maxsize
if d > 0 then ad = d end
if n > 0 then am = n end
if ad == m.duration and am == m.maxsize then
  return { m.duration, m.maxsize, ad, am, 0, 0 }
end

local now, dur_ms, cleared = now_ms(), m.duration * 1000, 0
for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
  cleared = cleared + live_count(IDS_PREFIX .. pid, ORDER_PREFIX .. pid, dur_ms, now)
end
drop_state(true)
local h = snapshot(info, nil, 0)
h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'duration', ad, 'maxsize', am
redis.call('HSET', META, unpack(h))
return { m.duration, m.maxsize, ad, am, 1, cleared }
