-- consume, before it writes or runs anything: NOPERM where this user may
-- not acknowledge the stream's entries (a completion is its XACK) or add to
-- the --dead-letter stream (redis.acl_check_cmd, Redis 7.0+ and Valkey;
-- what else an emulated add runs, its script checks); then the dead-letter
-- key's type ('none' without one).
local dead = KEYS[DEAD]
if redis.acl_check_cmd then
  if not redis.acl_check_cmd('XACK', stream, group, '0-1') then
    return redis.error_reply("NOPERM this user has no permissions to run the 'xack' command on the stream")
  end
  if dead and not redis.acl_check_cmd('XADD', dead, '*', 'f', 'v') then
    return redis.error_reply("NOPERM this user has no permissions to run the 'xadd' command on the --dead-letter stream")
  end
end
if not dead then return 'none' end
return redis.call('TYPE', dead)['ok']
