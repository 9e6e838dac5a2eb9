-- Emulated XCFGSET (R7): DURATION and MAXSIZE ('0' keeps; cfgsetArgs).
-- Reply: {before-duration, before-maxsize, after-duration, after-maxsize,
-- changed (0|1), iids cleared}. Same values change and clear nothing.

-- Part 1: everything that can fail.
local d, n = tonumber(DURATION), tonumber(MAXSIZE)
if d == nil or n == nil then return redis.error_reply('ERR value is not an integer or out of range') end
if d == 0 and n == 0 then
  return redis.error_reply('ERR At least one parameter must be specified')
end
if d < 0 or d > MAX_DURATION then return redis.error_reply('ERR IDMP-DURATION must be between 1 and ' .. MAX_DURATION .. ' seconds') end
if n < 0 or n > MAX_MAXSIZE then return redis.error_reply('ERR IDMP-MAXSIZE must be between 1 and ' .. MAX_MAXSIZE .. ' entries') end

local t = key_type(STREAM)
if t ~= 'none' and t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
if err then return err end
local m = load_meta()
err = conflict(m)
if err then return err end

if t == 'none' then
  -- R13: the stream is gone, so is everything it remembered.
  local plan = plan_drop(true, true, {}, {})
  for _, k in ipairs({ META, PIDS, BATCH_INDEX }) do
    if redis.call('EXISTS', k) == 1 then plan.keys[#plan.keys + 1] = k end
  end
  err = denied(drop_checks(plan, {}))
  if err then return err end
  run_drop(plan)
  return redis.error_reply('ERR no such key')
end

local info = xinfo()
-- A stream recreated by someone else: its state starts afresh, progress
-- records included (their lines are not in this stream).
local reset = stale(info, m)
local old_gen, old_unordered = m.gen, m.unordered
if reset or not m.owner then
  m = fresh_meta() -- no state yet: the other setting is the server-level default
end
local ad, am = m.duration, m.maxsize
if d > 0 then ad = d end
if n > 0 then am = n end
local same = ad == m.duration and am == m.maxsize
if same and not reset then
  return { m.duration, m.maxsize, ad, am, 0, 0 }
end

local now, dur_ms, cleared = now_ms(), m.duration * 1000, 0
if not reset then
  for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
    cleared = cleared + live_count(IDS_PREFIX .. pid, ORDER_PREFIX .. pid, dur_ms, now, m.unordered)
  end
end
local plan = plan_drop(true, reset, {}, {})
local extra = { PIDS }
if reset then extra[2] = BATCH_INDEX end
if reset and same then extra[3] = META end
for _, k in ipairs(extra) do
  if redis.call('EXISTS', k) == 1 then plan.keys[#plan.keys + 1] = k end
end
local checks = drop_checks(plan, { { 'HSET', META, 'f', 'v' }, { 'XRANGE', STREAM, '-', '+' } })
if old_unordered or (reset and old_gen) then checks[#checks + 1] = { 'HDEL', META, 'f' } end
err = denied(checks)
if err then return err end
-- The liveness token, for a state written now that has none.
local gen
if not same and (reset or not old_gen) then gen = plan_token(info) end

-- Part 2: the settings, then the deletions.
if same then
  -- A recreated stream, set to what it has: its old state goes, nothing else.
  run_drop(plan)
  return { m.duration, m.maxsize, ad, am, 0, 0 }
end
local h = snapshot(info, nil, 0)
h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4], h[#h + 5], h[#h + 6] = 'duration', ad, 'maxsize', am, 'pids', 0
if reset then h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'iids-added', 0, 'iids-duplicates', 0 end
if gen and create_token(gen) then h[#h + 1], h[#h + 2] = 'gen', gen end
redis.call('HSET', META, unpack(h))
-- Every pid's iids go, so the order of none is in question; the old
-- stream's token goes with its state.
local stale_fields = {}
if old_unordered then stale_fields[#stale_fields + 1] = 'unordered' end
if reset and old_gen and not gen then stale_fields[#stale_fields + 1] = 'gen' end
if #stale_fields > 0 then redis.call('HDEL', META, unpack(stale_fields)) end
run_drop(plan)
return { m.duration, m.maxsize, ad, am, 1, cleared }
