-- consume, before it writes or runs anything: NOPERM where this user may
-- not acknowledge the stream's entries (a completion is its XACK), add to
-- the --dead-letter stream (what else an emulated add runs, its script
-- checks), or make what consume's start writes: the group (CREATE set)
-- and the dead-letter stream's name in the META hash (redis.acl_check_cmd,
-- Redis 7.0+ and Valkey); then the dead-letter key's type ('none' without
-- one).
local dead = KEYS[DEAD]
if redis.acl_check_cmd then
  if not redis.acl_check_cmd('XACK', stream, group, '0-1') then
    return redis.error_reply("NOPERM this user has no permissions to run the 'xack' command on the stream")
  end
  if create ~= '' and not redis.acl_check_cmd('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM') then
    return redis.error_reply("NOPERM this user has no permissions to run the 'xgroup|create' command on the stream")
  end
  if dead and not redis.acl_check_cmd('XADD', dead, '*', 'f', 'v') then
    return redis.error_reply("NOPERM this user has no permissions to run the 'xadd' command on the --dead-letter stream")
  end
  if dead and not redis.acl_check_cmd('HSET', meta, group, dead) then
    return redis.error_reply("NOPERM this user has no permissions to run the 'hset' command on the consume hash that names the --dead-letter stream")
  end
end
if not dead then return 'none' end
return redis.call('TYPE', dead)['ok']
