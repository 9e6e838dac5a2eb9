-- consume --dead-letter, before consume writes anything: the key's type,
-- or NOPERM where this user may not add to it at all (redis.acl_check_cmd,
-- Redis 7.0+ and Valkey; what else an emulated add runs, its script checks).
if redis.acl_check_cmd and not redis.acl_check_cmd('XADD', DEAD, '*', 'f', 'v') then
  return redis.error_reply("NOPERM this user has no permissions to run the 'xadd' command on the --dead-letter stream")
end
return redis.call('TYPE', DEAD)['ok']
