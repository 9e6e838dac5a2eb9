-- release(key, now; token): the current holder deletes its PROCESSING or
-- FAILED record so a redelivery starts afresh. A COMPLETED record stays.
local function release(key, now, token)
  token = tonumber(token)
  local kind, h, current = load(key)

  if kind == 'foreign' then return foreign(key, now) end
  -- 'absent': released already, and nothing written by this call.
  if kind == 'none' then return reply('released', now, -2, 'absent') end
  if current ~= token or h.status == 'COMPLETED' then
    return reply('lost', now, redis.call('PTTL', key), '', h)
  end
  local err = denied_on({ { 'DEL', key } }, "the claim's key")
  if err then return err end
  redis.call('DEL', key)
  return reply('released', now, -2)
end

-- The call, with the arguments of releaseArgs (claim.go) by name.
return release(KEY, clock_ms(), TOKEN)
