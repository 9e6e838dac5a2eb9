-- fail(key, now; token, ttl ms or '', default ttl ms, error or '',
-- release '1'|'0')
-- The retention is the one given, else the one the claim was taken with.
local function fail(key, now, token, ttl, default_ttl, err, release)
  token, release = tonumber(token), release == '1'
  local kind, h, current = load(key)

  if kind == 'foreign' then return foreign(key, now) end
  if kind == 'none' then
    -- Released already (by this call's first attempt, or by whoever held
    -- it last): 'absent' says that this call wrote nothing.
    if release then return reply('released', now, -2, 'absent') end
    return reply('lost', now, -2)
  end
  if current ~= token or h.status == 'COMPLETED' then
    return reply('lost', now, redis.call('PTTL', key), '', h)
  end
  if release then
    local denial = denied_on({ { 'DEL', key } }, "the claim's key")
    if denial then return denial end
    redis.call('DEL', key)
    return reply('released', now, -2)
  end
  local keep = retention(key, h, ttl, default_ttl)
  local denial = denied_on({ { 'HSET', key, 'status', 'FAILED' }, { 'HDEL', key, 'error' }, { 'PEXPIRE', key, '1' } }, "the claim's key")
  if denial then return denial end

  -- A retried fail whose first reply was lost finds its own failure; the
  -- retention is set again (a write for WAIT to cover, as in complete).
  if h.status == 'FAILED' then
    if ttl ~= '' then hset(key, h, { 'ttl_ms', fmt(keep) }) end
    redis.call('PEXPIRE', key, keep)
    return reply('again', now, keep, '', h)
  end

  -- The error belongs to this failure: an older attempt's reason is removed.
  local kv = { 'status', 'FAILED', 'updated', fmt(now), 'ttl_ms', fmt(keep) }
  if err ~= '' then
    kv[#kv + 1] = 'error'
    kv[#kv + 1] = err
  end
  hset(key, h, kv)
  if err == '' and h.error then
    redis.call('HDEL', key, 'error')
    h.error = nil
  end
  redis.call('PEXPIRE', key, keep)
  return reply('ok', now, keep, '', h)
end

-- The call, with the arguments of failArgs (claim.go) by name.
return fail(KEY, clock_ms(), TOKEN, TTL, DEFAULT_TTL, ERR, RELEASE)
