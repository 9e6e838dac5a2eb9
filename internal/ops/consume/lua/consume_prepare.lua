-- consume, before it writes or runs anything, on the primary of ON: the
-- stream, or the --dead-letter stream (a node's ACL is its own). NOPERM
-- where this user may not, on the stream: read the group's entries
-- (XREADGROUP, XAUTOCLAIM: a read delivers), claim them (the commands of
-- claim's scripts on a CLAIM key, and TIME), acknowledge them (a
-- completion is its XACK), or make what consume's start writes: the group
-- (CREATE set) and the dead-letter stream's name in the META hash; on the
-- dead-letter stream: add to it (what else an emulated add runs, its
-- script checks). redis.acl_check_cmd: Redis 7.0+ and Valkey. Then ON's
-- type.
local function refused(cmds, what)
  for _, c in ipairs(cmds) do
    if not redis.acl_check_cmd(unpack(c)) then
      return redis.error_reply("NOPERM this user has no permissions to run the '" .. string.lower(c[1]) .. "' command on " .. what)
    end
  end
end
if redis.acl_check_cmd then
  local err
  if on ~= stream then
    err = refused({ { 'XADD', on, '*', 'f', 'v' } }, 'the --dead-letter stream')
  else
    local on_stream = { { 'XREADGROUP', 'GROUP', group, consumer, 'COUNT', '1', 'STREAMS', stream, '>' },
      { 'XAUTOCLAIM', stream, group, consumer, '1', '0-0', 'COUNT', '1' }, { 'XACK', stream, group, '0-1' }, { 'TYPE', stream } }
    if create ~= '' then on_stream[#on_stream + 1] = { 'XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM' } end
    err = refused(on_stream, 'the stream') or refused({ { 'TIME' } }, 'the server') or
      refused({ { 'TYPE', claim }, { 'HGETALL', claim }, { 'PTTL', claim }, { 'HSET', claim, 'status', 'PROCESSING' },
        { 'HDEL', claim, 'error' }, { 'PEXPIRE', claim, '1' }, { 'DEL', claim } }, 'the claim keys (' .. claim .. ')') or
      dead ~= '' and refused({ { 'HSET', meta, group, dead } }, 'the consume hash that names the --dead-letter stream')
  end
  if err then return err end
end
return redis.call('TYPE', on)['ok']
