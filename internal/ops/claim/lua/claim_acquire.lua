-- acquire(key, now; owner, lease ms, ttl ms or '' (not given), default ttl ms,
-- fingerprint or '', max attempts or 0, retry delay ms or 0, entry or nil)
-- The claim is taken with the lease given; the retention is the one given,
-- else the one the record keeps (ttl_ms), else the default. Both are stored
-- (lease_ms, ttl_ms) for renew, complete and fail to keep. A FAILED record
-- is claimed again once retry_delay ms have passed since it failed
-- (updated); 'delayed' before, with the ms left. A COMPLETED one
-- acknowledges the stream entry e, when given (consume), in this script.
local function acquire(key, now, owner, lease, ttl, default_ttl, fp, max_attempts, retry_delay, e)
  lease, max_attempts, retry_delay = tonumber(lease), tonumber(max_attempts), tonumber(retry_delay)
  local kind, h, token, attempts = load(key)

  if kind == 'foreign' then return foreign(key, now) end

  local outcome, previous = 'acquired', ''
  if kind == 'record' then
    local stored_fp = h.fingerprint or ''
    -- Same key, different request: refused whatever the status.
    if fp ~= '' and stored_fp ~= '' and stored_fp ~= fp then
      return reply('mismatch', now, redis.call('PTTL', key), '', h)
    end
    if h.status == 'COMPLETED' then
      local refused = ack_refused(e)
      if refused then return refused end
      ack(e)
      return reply('done', now, redis.call('PTTL', key), '', h)
    end
    outcome = 'retry'
    if h.status == 'PROCESSING' then
      if now < int(h.lease_until) then return reply('busy', now, redis.call('PTTL', key), '', h) end
      outcome, previous = 'takeover', h.owner or ''
    elseif max_attempts > 0 and attempts >= max_attempts then
      return reply('exhausted', now, redis.call('PTTL', key), '', h)
    elseif now < (int(h.updated) or 0) + retry_delay then
      return reply('delayed', now, redis.call('PTTL', key), fmt((int(h.updated) or 0) + retry_delay - now), h)
    end
  end

  -- Everything that can fail, before the first write.
  local keep = retention(key, h, ttl, default_ttl)
  if lease > keep then return over_retention(key, now, lease, keep, h) end
  local err = denied_on({ { 'HSET', key, 'status', 'PROCESSING' }, { 'PEXPIRE', key, '1' } }, "the claim's key")
  if err then return err end

  -- One compare-and-set: only the fields a claim owns change.
  local kv = { 'status', 'PROCESSING', 'owner', owner, 'token', fmt(next_token(token or 0)),
    'attempts', fmt((attempts or 0) + 1), 'lease_until', fmt(now + lease), 'updated', fmt(now),
    'lease_ms', fmt(lease), 'ttl_ms', fmt(keep) }
  if kind == 'none' then
    h = {}
    kv[#kv + 1] = 'created'
    kv[#kv + 1] = fmt(now)
  end
  if fp ~= '' and (h.fingerprint or '') == '' then
    kv[#kv + 1] = 'fingerprint'
    kv[#kv + 1] = fp
  end
  hset(key, h, kv)
  redis.call('PEXPIRE', key, keep)
  return reply(outcome, now, keep, previous, h)
end

-- The call, with the arguments of acquireArgs (claim.go) by name.
return acquire(KEY, clock_ms(), OWNER, LEASE, TTL, DEFAULT_TTL, FINGERPRINT, MAX_ATTEMPTS, RETRY_DELAY,
  entry(KEYS[XACK_STREAM], XACK_GROUP, XACK_ID))
