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

-- redis.acl_check_cmd of a command the server does not know by that name
-- (rename-command) raises "Invalid command passed to redis.acl_check_cmd()":
-- say which, in the server's words for an unknown command.
local redis = redis
if redis.acl_check_cmd then
  local check = redis.acl_check_cmd
  redis = setmetatable({acl_check_cmd = function(...)
    local ok, r = pcall(check, ...)
    if ok then return r end
    if string.find(tostring(type(r) == 'table' and r.err or r), 'Invalid command', 1, true) then
      r = {err = "ERR unknown command '" .. string.lower(tostring((...))) .. "'"}
    end
    error(r, 0)
  end}, {__index = redis})
end

-- first_denied is the first of cmds (each a command with its arguments)
-- that this user may not run, or nil: a script asks before it writes
-- anything, so that an ACL that allows one write and not the next leaves
-- nothing half written. Servers before 7.0 have no acl_check_cmd; there
-- an ACL denial can still stop a script midway.
local function first_denied(cmds)
  if not redis.acl_check_cmd then return nil end
  for _, c in ipairs(cmds) do
    if not redis.acl_check_cmd(unpack(c)) then return c end
  end
end

-- denied_on is nil when the user may run every command of cmds, else the
-- NOPERM error to return, naming the command and what it runs on.
local function denied_on(cmds, what)
  local c = first_denied(cmds)
  return c and redis.error_reply("NOPERM this user has no permissions to run the '" .. string.lower(c[1]) .. "' command on " .. what)
end
