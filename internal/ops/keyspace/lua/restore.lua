-- restore FILE: one record put back, decided on the server's clock in the
-- same step as the write. RESTORE ... ABSTTL with an expiry that has passed
-- writes nothing and replies OK, and with REPLACE it first deletes the key
-- that exists: a decision taken on the client's clock a moment earlier (or
-- on another node's, in a cluster) could so delete a newer record and count
-- it restored.
-- Arguments (restoreArgs in restore.go): KEY, its DUMP PAYLOAD, AT its
-- expiry on the server's clock in ms (0: none), REPLACE '1' to replace a
-- key that exists, ABSTTL '1' when the server takes ABSTTL (Redis 5.0+,
-- Valkey).
-- Reply: 'expired' or 'existing' (nothing written), 'restored' (the key was
-- missing), or 'replaced' (it existed: overwritten). An error of RESTORE (a
-- payload this server cannot load, NOPERM) writes nothing.
local key, payload = KEY, PAYLOAD
local at, replace, absttl = tonumber(AT), REPLACE == '1', ABSTTL == '1'
local now = now_ms()
if at > 0 and at <= now then return 'expired' end
local existed = redis.call('EXISTS', key) == 1
if existed and not replace then return 'existing' end
local ttl = 0
if at > 0 then
  ttl = absttl and at or at - now
end
local cmd = { 'RESTORE', key, ttl, payload }
if replace then cmd[#cmd + 1] = 'REPLACE' end
if at > 0 and absttl then cmd[#cmd + 1] = 'ABSTTL' end
redis.call(unpack(cmd))
if existed then return 'replaced' end
return 'restored'
