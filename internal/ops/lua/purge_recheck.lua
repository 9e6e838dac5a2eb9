-- purge re-check: delete each key only if it is still what the client decided
-- to delete, judged by a fingerprint of the value it read.
-- KEYS: the candidates. ARGV, per key in order: kind, no_ttl ('1': the key
-- must still have no TTL), then by kind:
--   string: length (STRLEN), n, sha1hex of its first n bytes
--   hash:   length (HLEN), sha1hex of the values of the fields below (each as
--           '<bytes>:<value>', in the order given), field count, fields...
--   type:   the Redis type, its length ('' = not compared)
-- Returns one integer per key: 1 deleted, 0 kept (changed or gone).
local length_of = {string = 'STRLEN', hash = 'HLEN', set = 'SCARD', list = 'LLEN', zset = 'ZCARD', stream = 'XLEN'}
local out = {}
local a = 1
for i, key in ipairs(KEYS) do
  local kind, no_ttl = ARGV[a], ARGV[a + 1]
  a = a + 2
  local t = redis.call('TYPE', key)['ok']
  local same = not (no_ttl == '1' and redis.call('PTTL', key) ~= -1)
  if kind == 'string' then
    local len, n, digest = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2]
    a = a + 3
    same = same and t == 'string' and redis.call('STRLEN', key) == len
    if same and n > 0 then
      same = redis.sha1hex(redis.call('GETRANGE', key, 0, n - 1)) == digest
    end
  elseif kind == 'hash' then
    local len, digest, nf = tonumber(ARGV[a]), ARGV[a + 1], tonumber(ARGV[a + 2])
    local first = a + 3
    a = first + nf
    same = same and t == 'hash' and redis.call('HLEN', key) == len
    if same and nf > 0 then
      local vals = redis.call('HMGET', key, unpack(ARGV, first, first + nf - 1))
      local parts = {}
      for j = 1, nf do
        local v = vals[j]
        if not v then
          same = false
          break
        end
        parts[j] = #v .. ':' .. v
      end
      same = same and redis.sha1hex(table.concat(parts)) == digest
    end
  else
    local want, len = ARGV[a], ARGV[a + 1]
    a = a + 2
    same = same and t == want
    if same and len ~= '' and length_of[t] then
      same = redis.call(length_of[t], key) == tonumber(len)
    end
  end
  if same then
    redis.call('UNLINK', key)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
