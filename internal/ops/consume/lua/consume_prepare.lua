-- consume, before it writes or runs anything, on the primary of ON: the
-- stream, or the --dead-letter stream (a node's ACL is its own). NOPERM
-- where this user may not, on the stream: read the group's entries
-- (XREADGROUP, XAUTOCLAIM: a read delivers), claim them (the commands of
-- claim's scripts on a CLAIM key, and TIME), acknowledge them (a
-- completion is its XACK), or make what consume's start writes: the group
-- (CREATE set) and the dead-letter stream's name in the META hash; on the
-- dead-letter stream: add to it (what else an emulated add runs, its
-- script checks), by the prelude's denied_on. Then ON's type.
local err
if on ~= stream then
  err = denied_on({ { 'XADD', on, '*', 'f', 'v' }, { 'TYPE', on } }, 'the --dead-letter stream')
else
  local on_stream = { { 'XREADGROUP', 'GROUP', group, consumer, 'COUNT', '1', 'STREAMS', stream, '>' },
    { 'XAUTOCLAIM', stream, group, consumer, '1', '0-0', 'COUNT', '1' }, { 'XACK', stream, group, '0-1' }, { 'TYPE', stream } }
  if create ~= '' then on_stream[#on_stream + 1] = { 'XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM' } end
  err = denied_on(on_stream, 'the stream') or denied_on({ { 'TIME' } }, 'the server') or
    denied_on({ { 'TYPE', claim }, { 'HGETALL', claim }, { 'PTTL', claim }, { 'HSET', claim, 'status', 'PROCESSING' },
      { 'HDEL', claim, 'error' }, { 'PEXPIRE', claim, '1' }, { 'DEL', claim } }, 'the claim keys (' .. claim .. ')') or
    dead ~= '' and denied_on({ { 'HSET', meta, group, dead } }, 'the consume hash that names the --dead-letter stream')
end
if err then return err end
return redis.call('TYPE', on)['ok']
