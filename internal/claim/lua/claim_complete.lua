-- complete(key, now; token, ttl ms, has result '1'|'0', result)
local function complete(key, now, token, ttl, has_result, result)
  token = tonumber(token)
  -- A lean call reads only the fields it decides on; other paths read the rest.
  local kind, h, current = load(key, not FULL)
  local function all() if FULL then return h end return whole(key) end

  if kind == 'foreign' then return foreign(key, now) end
  if kind == 'none' then return reply('lost', now, -2) end
  if current ~= token then return reply('lost', now, redis.call('PTTL', key), '', all()) end
  -- A retried complete whose first reply was lost finds its own completion.
  if h.status == 'COMPLETED' then return reply('again', now, redis.call('PTTL', key), '', all()) end
  if h.status ~= 'PROCESSING' then return reply('lost', now, redis.call('PTTL', key), '', all()) end

  -- lease_until, fingerprint, created, attempts, owner and error are kept.
  if has_result == '1' then
    hset(key, h, { 'status', 'COMPLETED', 'updated', fmt(now), 'result', result })
    h.result = nil -- Go has it: not sent back
  else
    hset(key, h, { 'status', 'COMPLETED', 'updated', fmt(now) })
  end
  redis.call('PEXPIRE', key, ttl)
  return reply('ok', now, tonumber(ttl), '', h, CORE)
end
