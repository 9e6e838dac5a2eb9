-- fail(key, now; token, ttl ms, error or '', release '1'|'0')
local function fail(key, now, token, ttl, err, release)
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
    redis.call('DEL', key)
    return reply('released', now, -2)
  end
  -- A retried fail whose first reply was lost finds its own failure; the
  -- retention is set again (a write for WAIT to cover, as in complete).
  if h.status == 'FAILED' then
    redis.call('PEXPIRE', key, ttl)
    return reply('again', now, tonumber(ttl), '', h)
  end

  -- The error belongs to this failure: an older attempt's reason is removed.
  if err ~= '' then
    hset(key, h, { 'status', 'FAILED', 'updated', fmt(now), 'error', err })
  else
    hset(key, h, { 'status', 'FAILED', 'updated', fmt(now) })
    if h.error then
      redis.call('HDEL', key, 'error')
      h.error = nil
    end
  end
  redis.call('PEXPIRE', key, ttl)
  return reply('ok', now, tonumber(ttl), '', h)
end
