-- purge --match PATTERN --orphan-state: drops the emulated IDMP state of a
-- stream that is gone, whole and atomically, only while it is gone.
--
-- Arguments (dropOrphanArgs): the common layout of one name the state may
-- belong to; from KEYS[FOUND], more keys of that state the caller found
-- (a per-pid key its pids set no longer names); NNAMES, how many names the
-- state may belong to ("s" and "{s}" share their state keys), and from
-- ARGV[NAMES] the names.
-- Reply: the number of keys deleted, or -1 when one of the names is a
-- stream again, and nothing is deleted. (A key of another kind under the
-- name is no stream: the state is orphaned all the same, as a scan flags
-- it.)

-- Part 1: reads and checks.
local n = tonumber(NNAMES)
if not n or n < 1 or NAMES_LAST - NAMES + 1 ~= n then
  return redis.error_reply('ERR idmpctl: malformed drop call')
end
for i = 1, n do
  if key_type(ARGV[NAMES + i - 1]) == 'stream' then return -1 end
end
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
if err then return err end
-- A per-pid key the caller names must be of this state (its prefix).
local prefix = META .. ':'
for i = FOUND, #KEYS do
  if KEYS[i] ~= META and string.sub(KEYS[i], 1, #prefix) ~= prefix then
    return redis.error_reply('ERR idmpctl: ' .. KEYS[i] .. ' is not a key of the state ' .. META)
  end
end
local plan = plan_drop(true, true, {}, {})
-- The keys one by one (unpack stops near 8,000 values); run_drop deletes
-- each once.
local function add(k)
  if redis.call('EXISTS', k) == 1 then plan.keys[#plan.keys + 1] = k end
end
add(META)
add(PIDS)
add(BATCH_INDEX)
for i = FOUND, #KEYS do add(KEYS[i]) end
err = denied(drop_checks(plan, {}))
if err then return err end

-- Part 2: the deletions (run_drop deletes each key once).
run_drop(plan)
local seen, count = {}, 0
for _, k in ipairs(plan.keys) do
  if not seen[k] then
    seen[k] = true
    count = count + 1
  end
end
return count
