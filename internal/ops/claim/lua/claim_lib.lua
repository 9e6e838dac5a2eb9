-- Shared prelude of the claim scripts (claim.md). Each claim_<verb>.lua
-- defines the transition as a function of (key, now, its arguments as
-- strings); Go builds each verb's script from this prelude, the verb's
-- function and a call of it on KEYS[1] with ARGV. Every script is one
-- self-contained EVAL.

-- Writes follow TIME: that needs effects replication, the default since
-- Redis 5 and the only mode since 7.0 (which has REDIS_VERSION).
if not redis.REDIS_VERSION and redis.replicate_commands then redis.replicate_commands() end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers are written with %d: Redis may format a plain Lua number as 1.7e+12.
local function fmt(n) return string.format('%d', n) end

-- A strict non-negative integer, or nil.
local function int(s)
  if type(s) ~= 'string' or #s > 15 or not string.match(s, '^%d+$') then return nil end
  return tonumber(s)
end

local STATUSES = { PROCESSING = true, COMPLETED = true, FAILED = true }

-- load classifies the key: 'none'; 'record' with its fields, fencing token
-- and attempts; or 'foreign': never written by a claim script.
local function load(key)
  -- One read: HGETALL is empty for an absent key and WRONGTYPE for a non-hash.
  local flat = redis.pcall('HGETALL', key)
  if flat.err then return 'foreign' end
  if #flat == 0 then return 'none' end
  local h = to_table(flat)
  local token = int(h.token)
  if not STATUSES[h.status] or not token or token < 1 then return 'foreign' end
  -- A PROCESSING claim without a deadline is never taken for abandoned.
  if h.status == 'PROCESSING' and not int(h.lease_until) then return 'foreign' end
  return 'record', h, token, int(h.attempts) or token
end

-- hset writes the field/value pairs of kv (a flat list) in one HSET and
-- mirrors them in h, so the reply needs no second read.
local function hset(key, h, kv)
  redis.call('HSET', key, unpack(kv))
  for i = 1, #kv, 2 do h[kv[i]] = kv[i + 1] end
end

-- reply is what every claim script returns: the outcome, the server time,
-- the key's PTTL (-2: absent), one outcome-specific string, then every field
-- as it stands after the call.
local function reply(outcome, now, pttl, extra, h)
  local out = { outcome, now, pttl, extra or '' }
  if h then
    for k, v in pairs(h) do
      out[#out + 1] = k
      out[#out + 1] = v
    end
  end
  return out
end

-- foreign answers for a key that is not a claim record: its type, and its
-- fields when it is a hash, for Go to say what it holds. Nothing is written.
local function foreign(key, now)
  local kind = redis.call('TYPE', key)['ok']
  local h
  if kind == 'hash' then h = to_table(redis.call('HGETALL', key)) end
  return reply('foreign', now, redis.call('PTTL', key), kind, h)
end
