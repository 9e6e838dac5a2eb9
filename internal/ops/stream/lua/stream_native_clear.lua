-- Native IDMP (Redis 8.6+): forget every producer's tracked iids of stream
-- STREAM by changing IDMP-DURATION and setting it back, atomically, on the
-- value current at that moment (Redis clears all iids on a change).
-- Reply: iids-tracked before, or the server's error (no such key, WRONGTYPE).

-- Part 1: the read and the permission to write both values.
local r = redis.pcall('XINFO', 'STREAM', STREAM)
if r.err then return r end
local info = to_table(r)
local d = tonumber(info['idmp-duration'])
local alt = d + 1
if d >= MAX_DURATION then alt = d - 1 end
if redis.acl_check_cmd and not redis.acl_check_cmd('XCFGSET', STREAM, 'IDMP-DURATION', tostring(alt)) then
  return redis.error_reply('NOPERM this user has no permission to run the XCFGSET command on key ' .. STREAM ..
    ': nothing was written')
end

-- Part 2: two settings that cannot fail (the values are in range).
redis.call('XCFGSET', STREAM, 'IDMP-DURATION', alt)
redis.call('XCFGSET', STREAM, 'IDMP-DURATION', d)
return info['iids-tracked']
