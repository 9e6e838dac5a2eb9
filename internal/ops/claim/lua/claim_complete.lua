-- complete(key, now; token, ttl ms or '', default ttl ms, has result '1'|'0',
-- result, entry or nil)
-- The retention is the one given, else the one the claim was taken with.
-- The stream entry e, when given (consume), is acknowledged in this script:
-- COMPLETED and its XACK are one step.
local function complete(key, now, token, ttl, default_ttl, has_result, result, e)
  token = tonumber(token)
  local kind, h, current = load(key)

  if kind == 'foreign' then return foreign(key, now) end
  if kind == 'none' then return reply('lost', now, -2) end
  if current ~= token then return reply('lost', now, redis.call('PTTL', key), '', h) end
  if h.status ~= 'PROCESSING' and h.status ~= 'COMPLETED' then
    return reply('lost', now, redis.call('PTTL', key), '', h)
  end
  local keep = retention(key, h, ttl, default_ttl)
  local err = denied_on({ { 'HSET', key, 'status', 'COMPLETED' }, { 'PEXPIRE', key, '1' } }, "the claim's key") or ack_refused(e)
  if err then return err end

  -- A retried complete whose first reply was lost finds its own completion.
  -- The retention is set again: a write, so that a WAIT after this call
  -- covers the first one's too (see redisconn.PipelinedDurable).
  if h.status == 'COMPLETED' then
    if ttl ~= '' then hset(key, h, { 'ttl_ms', fmt(keep) }) end
    redis.call('PEXPIRE', key, keep)
    ack(e)
    return reply('again', now, keep, '', h)
  end

  -- lease_until, lease_ms, fingerprint, created, attempts, owner and error
  -- are kept.
  local kv = { 'status', 'COMPLETED', 'updated', fmt(now), 'ttl_ms', fmt(keep) }
  if has_result == '1' then
    kv[#kv + 1] = 'result'
    kv[#kv + 1] = result
  end
  hset(key, h, kv)
  h.result = nil -- Go has it: not sent back
  redis.call('PEXPIRE', key, keep)
  ack(e)
  return reply('ok', now, keep, '', h)
end

-- The call, with the arguments of completeArgs (claim.go) by name.
return complete(KEY, clock_ms(), TOKEN, TTL, DEFAULT_TTL, HAS_RESULT, RESULT, entry(KEYS[XACK_STREAM], XACK_GROUP, XACK_ID))
