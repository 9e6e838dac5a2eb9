-- renew(KEYS[1]; token, lease ms, ttl ms)
local key = KEYS[1]
local token, lease, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local kind, h, current = load(key)

if kind == 'foreign' then return foreign(key, now) end
if kind == 'none' then return reply('lost', now, -2) end
local pttl = redis.call('PTTL', key)
if current ~= token or h.status ~= 'PROCESSING' then return reply('lost', now, pttl, '', h) end

-- The current token renews even past its lease: nobody has taken over.
hset(key, h, 'lease_until', fmt(now + lease), 'updated', fmt(now))
-- The retention is raised to ttl, never shortened (a longer --ttl at acquire wins).
if pttl < ttl then
  redis.call('PEXPIRE', key, ARGV[3])
  pttl = ttl
end
return reply('ok', now, pttl, '', h)
