-- consume, before it writes or runs anything, on the stream's primary.
-- NOPERM where this user may not, on the stream: read the group's entries
-- (XREADGROUP, XAUTOCLAIM: a read delivers), claim them (the commands of
-- claim's scripts on a CLAIM key, and TIME), acknowledge them (a
-- completion is its XACK), or make what consume's start writes: the group
-- (CREATE set) and the dead-letter stream's name in the META hash, by the
-- prelude's denied_on. (What a dead-letter add needs, the stream backend
-- checks: Streams.CheckAdd.) Then the stream's type.
local on_stream = { { 'XREADGROUP', 'GROUP', group, consumer, 'COUNT', '1', 'STREAMS', stream, '>' },
  { 'XAUTOCLAIM', stream, group, consumer, '1', '0-0', 'COUNT', '1' }, { 'XACK', stream, group, '0-1' }, { 'TYPE', stream } }
if create ~= '' then on_stream[#on_stream + 1] = { 'XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM' } end
local err = denied_on(on_stream, 'the stream') or denied_on({ { 'TIME' } }, 'the server') or
  denied_on({ { 'TYPE', claim }, { 'HGETALL', claim }, { 'PTTL', claim }, { 'HSET', claim, 'status', 'PROCESSING' },
    { 'HDEL', claim, 'error' }, { 'PEXPIRE', claim, '1' }, { 'DEL', claim } }, 'the claim keys (' .. claim .. ')') or
  dead ~= '' and denied_on({ { 'HSET', meta, group, dead } }, 'the consume hash that names the --dead-letter stream')
if err then return err end
return redis.call('TYPE', stream)['ok']
