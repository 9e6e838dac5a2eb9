-- renew(key, now; token, lease ms, ttl ms)
local function renew(key, now, token, lease, ttl)
  token, lease = tonumber(token), tonumber(lease)
  local ttl_ms = tonumber(ttl)
  local kind, h, current = load(key)

  if kind == 'foreign' then return foreign(key, now) end
  if kind == 'none' then return reply('lost', now, -2) end
  local pttl = redis.call('PTTL', key)
  if current ~= token or h.status ~= 'PROCESSING' then return reply('lost', now, pttl, '', h) end

  -- The current token renews even past its lease: nobody has taken over.
  hset(key, h, { 'lease_until', fmt(now + lease), 'updated', fmt(now) })
  -- The retention is raised to ttl, never shortened (a longer --ttl at acquire wins).
  if pttl < ttl_ms then
    redis.call('PEXPIRE', key, ttl)
    pttl = ttl_ms
  end
  return reply('ok', now, pttl, '', h)
end
