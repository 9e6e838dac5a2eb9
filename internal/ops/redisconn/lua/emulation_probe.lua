-- Whether the server's Lua checks permissions (redis.acl_check_cmd: Redis
-- 7.0+, Valkey): 1 where it does (redisconn.Emulation).
if redis.acl_check_cmd then return 1 end
return 0
