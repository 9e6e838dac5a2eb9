-- The prelude of every idmpctl script (redisconn.NewScript puts it first):
-- what all of them need, defined once.

-- Writes that follow TIME need effects replication: the default since
-- Redis 5, the only mode since 7.0 (which has REDIS_VERSION), and a call
-- that Redis 6.2 still wants.
if not redis.REDIS_VERSION and redis.replicate_commands then redis.replicate_commands() end

-- The server's clock in milliseconds: every decision about time uses it.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A flat field/value reply (HGETALL, XINFO STREAM) as a table.
local function to_table(flat)
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

