-- xadd --batch: drops a stream's progress records whose time is up. The
-- INDEX scores each record by when it expires, on the server clock;
-- records have no TTL (an eviction policy of volatile-* would drop them
-- first). At most LIMIT records a call (pruneArgs). Reply: the number
-- dropped.
--
-- The records are not declared (their names are in the index): each is
-- read in part 1, where a key a cluster node no longer holds fails the
-- script before it writes.

-- Part 1: reads and checks.
local t = redis.call('TYPE', INDEX)['ok']
if t == 'none' then return 0 end
if t ~= 'zset' then return redis.error_reply('WRONGTYPE ' .. INDEX .. ' holds a ' .. t .. ', not a sorted set') end
local now = now_ms()
local del, unindex, rescore = {}, {}, {}
for _, k in ipairs(redis.call('ZRANGEBYSCORE', INDEX, '-inf', now, 'LIMIT', 0, tonumber(LIMIT))) do
  local kt = redis.call('TYPE', k)['ok']
  if kt == 'hash' then
    local exp = tonumber(redis.call('HGET', k, 'expires'))
    if not exp then
      -- Written before records carried their time: they had a TTL.
      local pttl = redis.call('PTTL', k)
      if pttl > 0 then exp = now + pttl end
    end
    if exp and exp > now then
      rescore[#rescore + 1], rescore[#rescore + 2] = exp, k
    else
      del[#del + 1], unindex[#unindex + 1] = k, k
    end
  elseif kt == 'none' then
    unindex[#unindex + 1] = k
  else
    unindex[#unindex + 1] = k -- not a record: out of the index, left alone
  end
end
if redis.acl_check_cmd then
  local checks = { { 'ZADD', INDEX, '0', 'm' }, { 'ZREM', INDEX, 'm' } }
  for _, k in ipairs(del) do checks[#checks + 1] = { 'DEL', k } end
  for _, c in ipairs(checks) do
    if not redis.acl_check_cmd(unpack(c)) then
      return redis.error_reply('NOPERM this user has no permission to run the ' .. c[1] .. ' command on key ' .. c[2])
    end
  end
end

-- Part 2: what stays is scored by its time; then the deletions.
if #rescore > 0 then redis.call('ZADD', INDEX, unpack(rescore)) end
if #del > 0 then redis.call('DEL', unpack(del)) end
if #unindex > 0 then redis.call('ZREM', INDEX, unpack(unindex)) end
return #del
