-- Shared prelude of the claim scripts (claim.md). Each claim_<verb>.lua
-- defines the transition as a function of (key, now, its arguments as
-- strings) and ends with a call of it with the call's arguments, which
-- redisconn.NewLua binds to locals named after the fields of the verb's
-- struct in claim.go (KEY, TOKEN...). Go builds each verb's script from
-- this prelude and the verb's file. Every script is one self-contained
-- EVAL.

-- The redisconn prelude comes before this file: effects replication (writes
-- follow TIME), now_ms and to_table.

-- The server's clock, read once a script (clock_ms, unlike the prelude's
-- now_ms): the record's times and a new token's clock part are the same
-- instant.
local clock_t
local function server_time()
  if not clock_t then clock_t = redis.call('TIME') end
  return tonumber(clock_t[1]), tonumber(clock_t[2])
end

local function clock_ms()
  local s, us = server_time()
  return s * 1000 + math.floor(us / 1000)
end

-- Integers are written with %d: Redis may format a plain Lua number as 1.7e+12.
local function fmt(n) return string.format('%d', n) end

-- A strict non-negative integer that a Lua number holds exactly (below
-- 2^53: fencing tokens are 16 digits), or nil.
local function int(s)
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^%d+$') then return nil end
  local n = tonumber(s)
  if n > 9007199254740991 then return nil end
  return n
end

-- next_token is the fencing token of a new claim: above the record's
-- current one (0: no record) and at least the server's clock in
-- microseconds. The clock part makes tokens strictly increase across the
-- deletion or expiry of a record, which takes its counter with it: a
-- zombie's old token never matches again. Its limit is the clock: a server
-- whose clock is behind the one that issued the last token (a failover to
-- a replica that is behind, a clock stepped back) can hand out a token
-- that was issued before, if the record was deleted meanwhile. Below 2^53
-- until the year 2255.
local function next_token(current)
  local s, us = server_time()
  return math.max(current + 1, s * 1000000 + us)
end

-- entry is the stream entry a step acknowledges in its own script
-- (consume: claim.Acking): { stream, group, id }, or nil for none.
local function entry(stream, group, id)
  if stream == nil then return nil end
  return { stream, group, id }
end

-- ack_refused is nil when the XACK of entry e (or none) cannot fail, and
-- otherwise the error to return before anything is written: the stream a
-- key of another type, an ID XACK would refuse, or an ACL without XACK.
local function ack_refused(e)
  if not e then return nil end
  local kind = redis.call('TYPE', e[1])['ok']
  if kind ~= 'stream' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  if not string.match(e[3], '^%d+%-%d+$') then
    return redis.error_reply('ERR Invalid stream ID specified as stream command argument')
  end
  return denied_on({ { 'XACK', e[1], e[2], e[3] } }, 'the stream')
end

-- ack acknowledges entry e (none: nothing), checked by ack_refused.
local function ack(e)
  if e then redis.call('XACK', e[1], e[2], e[3]) end
end

-- retention is the TTL in ms a write sets: the one given (ttl, a string,
-- '' when not given), else the one the record was taken with (ttl_ms),
-- else (a record written before ttl_ms existed) the default, never below
-- what the key has left: a default never shortens a stored retention.
local function retention(key, h, ttl, default)
  if ttl ~= '' then return tonumber(ttl) end
  local stored = h and int(h.ttl_ms)
  if stored and stored > 0 then return stored end
  local left = h and redis.call('PTTL', key) or -2
  return math.max(tonumber(default), left)
end

-- lease_of is the lease in ms a renewal grants: the one given (a string,
-- '' when not given), else the one the claim was taken with (lease_ms),
-- else (an older record) the lease its last acquire or renewal granted.
local function lease_of(h, lease, default)
  if lease ~= '' then return tonumber(lease) end
  local stored = int(h.lease_ms)
  if stored and stored > 0 then return stored end
  local lu, up = int(h.lease_until), int(h.updated)
  if lu and up and lu > up then return lu - up end
  return tonumber(default)
end

local STATUSES = { PROCESSING = true, COMPLETED = true, FAILED = true }

-- load classifies the key: 'none'; 'record' with its fields, fencing token
-- and attempts; or 'foreign': never written by a claim script.
local function load(key)
  -- One read: HGETALL is empty for an absent key and WRONGTYPE for a non-hash.
  local flat = redis.pcall('HGETALL', key)
  if flat.err then
    -- Only WRONGTYPE says what the key holds; any other refusal (an ACL
    -- without HGETALL) is the script's error, not a foreign key.
    if string.sub(flat.err, 1, 9) == 'WRONGTYPE' then return 'foreign' end
    error(flat)
  end
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

-- over_retention is the reply refusing a lease longer than the retention:
-- the record would expire, with its claim live.
local function over_retention(key, now, lease, ttl, h)
  return reply('lease_over_ttl', now, redis.call('PTTL', key), fmt(lease) .. ' ' .. fmt(ttl), h)
end
