-- read(key, now): the record with the server time and PTTL, in one snapshot.
local function read(key, now)
  local kind, h = load(key)
  if kind == 'none' then return reply('none', now, -2) end
  if kind == 'foreign' then return foreign(key, now) end
  return reply('ok', now, redis.call('PTTL', key), '', h)
end
