-- consume, before it writes or runs anything: NOPERM where this user may
-- not read the group's entries (XREADGROUP, XAUTOCLAIM: a read delivers),
-- claim them (the commands of claim's scripts on a CLAIM key), acknowledge
-- them (a completion is its XACK), add to the --dead-letter stream (what
-- else an emulated add runs, its script checks), or make what consume's
-- start writes: the group (CREATE set) and the dead-letter stream's name
-- in the META hash (redis.acl_check_cmd, Redis 7.0+ and Valkey); then the
-- dead-letter key's type ('none' without one).
local dead = KEYS[DEAD]
local function refused(cmds, what)
  for _, c in ipairs(cmds) do
    if not redis.acl_check_cmd(unpack(c)) then
      return redis.error_reply("NOPERM this user has no permissions to run the '" .. string.lower(c[1]) .. "' command on " .. what)
    end
  end
end
if redis.acl_check_cmd then
  local on_stream = { { 'XREADGROUP', 'GROUP', group, consumer, 'COUNT', '1', 'STREAMS', stream, '>' },
    { 'XAUTOCLAIM', stream, group, consumer, '1', '0-0', 'COUNT', '1' }, { 'XACK', stream, group, '0-1' } }
  if create ~= '' then on_stream[#on_stream + 1] = { 'XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM' } end
  local err = refused(on_stream, 'the stream') or
    refused({ { 'HGETALL', claim }, { 'PTTL', claim }, { 'HSET', claim, 'status', 'PROCESSING' }, { 'HDEL', claim, 'error' },
      { 'PEXPIRE', claim, '1' }, { 'DEL', claim } }, 'the claim keys (' .. claim .. ')') or
    dead and (refused({ { 'XADD', dead, '*', 'f', 'v' } }, 'the --dead-letter stream') or
      refused({ { 'HSET', meta, group, dead } }, 'the consume hash that names the --dead-letter stream'))
  if err then return err end
end
if not dead then return 'none' end
return redis.call('TYPE', dead)['ok']
