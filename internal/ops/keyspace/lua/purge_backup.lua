-- purge --backup: each candidate as it is just before purge deletes it, read
-- atomically: PTTL, its expiry on the server's clock (PEXPIRETIME, Redis 7.0+
-- and Valkey; before that TIME + PTTL, which can be a few ms late: PTTL
-- counts from the script's start), and the DUMP payload. Reads only.
-- KEYS: the candidates (one slot), from KEYS[CANDIDATES] (backupArgs in
-- backup.go). Reply: one {pttl_ms, expires_at_ms, payload} per key, in
-- KEYS order; a key that is gone is {-2, 0, false}.
local now = now_ms()
local out = {}
for k = CANDIDATES, #KEYS do
  local i, key = k - CANDIDATES + 1, KEYS[k]
  local payload = redis.call('DUMP', key)
  if payload then
    local pttl = redis.call('PTTL', key)
    local at = 0
    if pttl >= 0 then
      at = redis.pcall('PEXPIRETIME', key)
      if type(at) ~= 'number' then at = now + pttl end
    end
    out[i] = { pttl, at, payload }
  else
    out[i] = { -2, 0, false }
  end
end
return out
