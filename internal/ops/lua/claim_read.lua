-- read(KEYS[1]): the record with the server time and PTTL, in one snapshot.
local key = KEYS[1]
local now = now_ms()
local kind, h = load(key)
if kind == 'none' then return reply('none', now, -2) end
if kind == 'foreign' then return foreign(key, now) end
return reply('ok', now, redis.call('PTTL', key), '', h)
