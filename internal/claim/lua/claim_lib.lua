-- Shared prelude of the claim scripts (claim.md). Each claim_<verb>.lua
-- defines the transition as a function of (key, now, its arguments as
-- strings); Go builds every script from this prelude, the functions it
-- needs and a main: one verb on KEYS[1] (the single-key calls), or
-- claim_steps.lua (many steps, one TIME). Every script is one
-- self-contained EVAL. ARGV[1] is the reply mode ('1': the whole record on
-- every path; '0': on a success path only the fields its caller needs).

-- Writes follow TIME: that needs effects replication, the default since
-- Redis 5 and the only mode since 7.0 (which has REDIS_VERSION).
if not redis.REDIS_VERSION and redis.replicate_commands then redis.replicate_commands() end

local FULL = ARGV[1] == '1'

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

-- The fields a step decides on (and a lean load reads).
local CORE = { 'status', 'token', 'attempts', 'lease_until' }

-- load classifies the key: 'none'; 'record' with its fields, fencing token
-- and attempts; or 'foreign': never written by a claim script. With core,
-- it reads only CORE (HMGET), and h holds only those fields.
local function load(key, core)
  local h = {}
  if core then
    local vals = redis.pcall('HMGET', key, unpack(CORE))
    if vals.err then return 'foreign' end
    local any = false
    for i = 1, #CORE do
      if vals[i] then
        h[CORE[i]] = vals[i]
        any = true
      end
    end
    if not any then
      if redis.call('EXISTS', key) == 0 then return 'none' end
      return 'foreign'
    end
  else
    -- One read: HGETALL is empty for an absent key and WRONGTYPE for a non-hash.
    local flat = redis.pcall('HGETALL', key)
    if flat.err then return 'foreign' end
    if #flat == 0 then return 'none' end
    for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  end
  local token = int(h.token)
  if not STATUSES[h.status] or not token or token < 1 then return 'foreign' end
  -- A PROCESSING claim without a deadline is never taken for abandoned.
  if h.status == 'PROCESSING' and not int(h.lease_until) then return 'foreign' end
  return 'record', h, token, int(h.attempts) or token
end

-- whole is the record's every field, for a reply after a lean load.
local function whole(key)
  local h = {}
  local flat = redis.call('HGETALL', key)
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  return h
end

-- hset writes the field/value pairs of kv (a flat list) in one HSET and
-- mirrors them in h, so the reply needs no second read.
local function hset(key, h, kv)
  redis.call('HSET', key, unpack(kv))
  for i = 1, #kv, 2 do h[kv[i]] = kv[i + 1] end
end

-- reply is what every claim script returns: the outcome, the server time,
-- the key's PTTL (-2: absent), one outcome-specific string, then the fields
-- as they stand after the call: every field, or in a lean call only those
-- named in lean (success paths name them).
local function reply(outcome, now, pttl, extra, h, lean)
  local out = { outcome, now, pttl, extra or '' }
  if h and lean and not FULL then
    for _, k in ipairs(lean) do
      local v = h[k]
      if v then
        out[#out + 1] = k
        out[#out + 1] = v
      end
    end
  elseif h then
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
  if kind == 'hash' then h = whole(key) end
  return reply('foreign', now, redis.call('PTTL', key), kind, h)
end
