-- DEL or UNLINK of keys, with the emulated IDMP state of each (R13: the
-- state lives and dies with its stream). exec sends every DEL and UNLINK
-- of emulated mode through it: the state goes at once, rather than when
-- a later call finds its token missing, and a stream whose meta has no
-- token (settings CONFIG SET gave it) cannot pass for the one rebuilt
-- after it.
--
-- Arguments (delArgs): the first key's state (the common layout), then
-- from KEYS[MORE_KEYS] and ARGV[MORE] the others', per key: the key, its
-- meta hash and pids set; its ids prefix, order prefix and name; then OP,
-- DEL or UNLINK; last, the server-level defaults (unused). Reply: the
-- command's own (the number of keys deleted, of those named).

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

local op = OP
local n = 1 + (#KEYS - MORE_KEYS + 1) / 3
if (op ~= 'DEL' and op ~= 'UNLINK') or n ~= math.floor(n) or MORE_LAST - MORE + 1 ~= 3 * (n - 1) then
  return redis.error_reply('ERR idmpctl: malformed emulated ' .. tostring(op) .. ' call (' .. #KEYS .. ' keys, ' .. #ARGV .. ' arguments)')
end
-- Each key: the key, its meta hash, pids set, ids prefix, order prefix and
-- name.
local each = { { STREAM, META, PIDS, IDS_PREFIX, ORDER_PREFIX, OWNER } }
for i = 2, n do
  local k, a = MORE_KEYS + 3 * (i - 2), MORE + 3 * (i - 2)
  each[i] = { KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a], ARGV[a + 1], ARGV[a + 2] }
end
-- The command's keys go in slices: Lua's unpack stops near 8,000 values,
-- and a DEL may name more keys than that.
local named, names = {}, {}
for i = 1, n do
  named[i] = each[i][1]
  names[each[i][1]] = true
end
local slice = 1000
if redis.acl_check_cmd then
  for i = 1, n, slice do
    if not redis.acl_check_cmd(op, unpack(named, i, math.min(i + slice - 1, n))) then
      return redis.error_reply("NOPERM User has no permissions to run the '" .. string.lower(op) .. "' command")
    end
  end
end

-- The state of each key that owns one (its meta names it: "s" and "{s}"
-- share their state keys, and DEL of one leaves the other's).
local state, seen = {}, {}
local function add(k)
  if not seen[k] and not names[k] and redis.call('EXISTS', k) == 1 then
    seen[k] = true
    state[#state + 1] = k
  end
end
for i = 1, n do
  local _, meta, pids, idsp, orderp, owner = unpack(each[i])
  if key_type(meta) == 'hash' and redis.call('HGET', meta, 'stream') == owner then
    if key_type(pids) == 'set' then
      for _, pid in ipairs(redis.call('SMEMBERS', pids)) do
        add(idsp .. pid)
        add(orderp .. pid)
      end
    end
    local batches = meta .. ':batches'
    if key_type(batches) == 'zset' then
      for _, k in ipairs(redis.call('ZRANGE', batches, 0, -1)) do add(k) end
    end
    add(batches)
    add(pids)
    add(meta)
  end
end
local checks = {}
for _, k in ipairs(state) do checks[#checks + 1] = { op, k } end
local err = denied(checks)
if err then return err end

------------------------------------------------------------------------
-- Part 2: the command, then the states.
------------------------------------------------------------------------

-- The script is atomic: the slices delete what the one command would,
-- and a key named twice counts once (the second slice finds it gone).
local reply = 0
for i = 1, n, slice do
  reply = reply + redis.call(op, unpack(named, i, math.min(i + slice - 1, n)))
end
for i = 1, #state, 1000 do
  redis.call(op, unpack(state, i, math.min(i + 999, #state)))
end
return reply
