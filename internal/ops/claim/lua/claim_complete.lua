-- complete(key, now; token, ttl ms, has result '1'|'0', result)
local function complete(key, now, token, ttl, has_result, result)
  token = tonumber(token)
  local kind, h, current = load(key)

  if kind == 'foreign' then return foreign(key, now) end
  if kind == 'none' then return reply('lost', now, -2) end
  if current ~= token then return reply('lost', now, redis.call('PTTL', key), '', h) end
  -- A retried complete whose first reply was lost finds its own completion.
  -- The retention is set again: a write, so that a WAIT after this call
  -- covers the first one's too (see redisconn.PipelinedDurable).
  if h.status == 'COMPLETED' then
    redis.call('PEXPIRE', key, ttl)
    return reply('again', now, tonumber(ttl), '', h)
  end
  if h.status ~= 'PROCESSING' then return reply('lost', now, redis.call('PTTL', key), '', h) end

  -- lease_until, fingerprint, created, attempts, owner and error are kept.
  if has_result == '1' then
    hset(key, h, { 'status', 'COMPLETED', 'updated', fmt(now), 'result', result })
    h.result = nil -- Go has it: not sent back
  else
    hset(key, h, { 'status', 'COMPLETED', 'updated', fmt(now) })
  end
  redis.call('PEXPIRE', key, ttl)
  return reply('ok', now, tonumber(ttl), '', h)
end
