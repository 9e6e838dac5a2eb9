-- acquire(key, now; owner, lease ms, ttl ms, fingerprint or '', max attempts or 0)
local function acquire(key, now, owner, lease, ttl, fp, max_attempts)
  lease, max_attempts = tonumber(lease), tonumber(max_attempts)
  local kind, h, token, attempts = load(key)

  if kind == 'foreign' then return foreign(key, now) end
  if kind == 'none' then
    h = {}
    local kv = { 'status', 'PROCESSING', 'owner', owner, 'token', '1', 'attempts', '1',
      'lease_until', fmt(now + lease), 'created', fmt(now), 'updated', fmt(now) }
    if fp ~= '' then
      kv[#kv + 1] = 'fingerprint'
      kv[#kv + 1] = fp
    end
    hset(key, h, kv)
    redis.call('PEXPIRE', key, ttl)
    return reply('acquired', now, tonumber(ttl), '', h)
  end

  local stored_fp = h.fingerprint or ''
  -- Same key, different request: refused whatever the status.
  if fp ~= '' and stored_fp ~= '' and stored_fp ~= fp then
    return reply('mismatch', now, redis.call('PTTL', key), '', h)
  end
  if h.status == 'COMPLETED' then return reply('done', now, redis.call('PTTL', key), '', h) end

  local outcome, previous = 'retry', ''
  if h.status == 'PROCESSING' then
    if now < int(h.lease_until) then return reply('busy', now, redis.call('PTTL', key), '', h) end
    outcome, previous = 'takeover', h.owner or ''
  elseif max_attempts > 0 and attempts >= max_attempts then
    return reply('exhausted', now, redis.call('PTTL', key), '', h)
  end

  -- One compare-and-set: only the fields a claim owns change.
  local kv = { 'status', 'PROCESSING', 'owner', owner, 'token', fmt(token + 1),
    'attempts', fmt(attempts + 1), 'lease_until', fmt(now + lease), 'updated', fmt(now) }
  if fp ~= '' and stored_fp == '' then
    kv[#kv + 1] = 'fingerprint'
    kv[#kv + 1] = fp
  end
  hset(key, h, kv)
  redis.call('PEXPIRE', key, ttl)
  return reply(outcome, now, tonumber(ttl), previous, h)
end
