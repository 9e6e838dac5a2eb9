-- renew(key, now; token, lease ms or '', ttl ms or '', default lease ms,
-- default ttl ms)
-- Extends a live claim by the lease given, else by the one it was taken
-- with; the retention is the one given, else the stored one. A flag not
-- given never changes what the claim was taken with.
local function renew(key, now, token, lease, ttl, default_lease, default_ttl)
  token = tonumber(token)
  local kind, h, current = load(key)

  if kind == 'foreign' then return foreign(key, now) end
  if kind == 'none' then return reply('lost', now, -2) end
  if current ~= token or h.status ~= 'PROCESSING' then
    return reply('lost', now, redis.call('PTTL', key), '', h)
  end

  local grant = lease_of(h, lease, default_lease)
  -- Not given, a lease never ends before the one the record holds (a
  -- record with no lease_ms nor updated falls back to the default).
  if lease == '' then grant = math.max(grant, int(h.lease_until) - now) end
  local keep = retention(key, h, ttl, default_ttl)
  if grant > keep then return over_retention(key, now, grant, keep, h) end
  local err = denied_on({ { 'HSET', key, 'lease_until', '1' }, { 'PEXPIRE', key, '1' } }, "the claim's key")
  if err then return err end

  -- The current token renews even past its lease: nobody has taken over.
  hset(key, h, { 'lease_until', fmt(now + grant), 'updated', fmt(now), 'lease_ms', fmt(grant), 'ttl_ms', fmt(keep) })
  redis.call('PEXPIRE', key, keep)
  return reply('ok', now, keep, '', h)
end

-- The call, with the arguments of renewArgs (claim.go) by name.
return renew(KEY, clock_ms(), TOKEN, LEASE, TTL, DEFAULT_LEASE, DEFAULT_TTL)
