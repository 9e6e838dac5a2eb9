-- Gives a stream without emulated IDMP state the server-level defaults in
-- force now, before a CONFIG SET changes them (exec runs it for each
-- stream of the database): Redis 8.6.3 sets a stream's IDMP-DURATION and
-- IDMP-MAXSIZE when it creates the stream (streamNew), so a change of the
-- defaults concerns only streams created after it.
--
-- The defaults to keep are the last two arguments, as for every script.
-- Reply: 1 when the stream was given them, 0 when it has settings of its
-- own (live state), is no stream, or its state keys are not ours to
-- write (another type, another stream's: the add refuses those).
-- The meta written has the settings and the stream's snapshot but no
-- token (a group on every stream of the database would show to its
-- readers): a stream deleted and rebuilt by another client with the same
-- entries is taken for this one; through exec, DEL and UNLINK drop it.

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

if not DEFAULTS_KNOWN then
  return redis.error_reply('ERR idmpctl: malformed emulated mark call (' .. #ARGV .. ' arguments)')
end
if key_type(STREAM) ~= 'stream' then return 0 end
if bad_type(META, 'hash') or bad_type(PIDS, 'set') then return 0 end
local m = load_meta()
if m.owner and m.owner ~= OWNER then return 0 end
local info = xinfo()
if m.owner and not stale(info, m) then return 0 end

-- The state of a stream gone under this name goes.
local plan = plan_drop(true, true, {}, {})
for _, k in ipairs({ PIDS, BATCH_INDEX }) do
  if redis.call('EXISTS', k) == 1 then plan.keys[#plan.keys + 1] = k end
end
local checks = drop_checks(plan, { { 'HSET', META, 'f', 'v' }, { 'XRANGE', STREAM, '-', '+' } })
if m.gen or m.unordered then checks[#checks + 1] = { 'HDEL', META, 'f' } end
local err = denied(checks)
if err then return err end

------------------------------------------------------------------------
-- Part 2: the settings, then the deletions.
------------------------------------------------------------------------

local h = snapshot(info, nil, 0)
h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'duration', SERVER_DURATION, 'maxsize', SERVER_MAXSIZE
h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'iids-added', 0, 'iids-duplicates', 0
h[#h + 1], h[#h + 2] = 'pids', 0
redis.call('HSET', META, unpack(h))
local old = {}
if m.gen then old[#old + 1] = 'gen' end
if m.unordered then old[#old + 1] = 'unordered' end
if #old > 0 then redis.call('HDEL', META, unpack(old)) end
run_drop(plan)
return 1
