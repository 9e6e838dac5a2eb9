-- purge re-check: delete each key only if it is still what the client decided
-- to delete, judged by the value it read: compared whole where it is short,
-- by fingerprint where it is long.
-- KEYS: the candidates, from KEYS[CANDIDATES]. ARGV (recheckArgs in
-- purge.go): NLISTS the number of field lists; then, from ARGV[BODY], each
-- list (its length, then its field names); then runs of keys compared
-- alike, in KEYS order, each: the number of its keys, kind, no_ttl ('1': the key must still
-- have no TTL), the kind's shared part, then each key's own part:
--   hash:   shared: length (HLEN), field list; own: the values of the
--           list's fields joined by NUL (none holds a NUL)
--   hashd:  shared: length (HLEN), field list; own: sha1hex of the values of
--           the fields (each as '<bytes>:<value>', in list order)
--   string: own: the whole value
--   strd:   own: length (STRLEN, above 0), n, sha1hex of its first n bytes
--   type:   own: the Redis type, its length ('' = not compared)
-- and, last of every key's own part, live: the server time in ms until
-- which the key is live work (a PROCESSING record's lease or deadline, as
-- decoded from the value compared), '0' for none or with --force.
-- Returns one integer per key: 1 deleted, 0 kept (changed or gone), 2 kept
-- because it is live on the server's clock: a purge never deletes live
-- work it was not told to (--force), whatever the client decided.
-- The value reads double as the type check: HLEN and GET answer WRONGTYPE
-- (an error table, never equal to a number or a string) for another type.
local length_of = {string = 'STRLEN', hash = 'HLEN', set = 'SCARD', list = 'LLEN', zset = 'ZCARD', stream = 'XLEN'}
local lists = {}
local a = BODY
for l = 1, tonumber(NLISTS) do
  local n = tonumber(ARGV[a])
  local fields = {}
  for j = 1, n do fields[j] = ARGV[a + j] end
  lists[l] = fields
  a = a + 1 + n
end
local now = now_ms()
local out, gone, doomed = {}, {}, {}
local nargv, i = #ARGV, CANDIDATES - 1
while a <= nargv do
  local count, kind, no_ttl = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2]
  a = a + 3
  local len, fields, nf
  if kind == 'hash' or kind == 'hashd' then
    len, fields = tonumber(ARGV[a]), lists[tonumber(ARGV[a + 1])]
    nf = #fields
    a = a + 2
  end
  for _ = 1, count do
    i = i + 1
    local key = KEYS[i]
    local same
    if kind == 'hash' or kind == 'hashd' then
      same = redis.pcall('HLEN', key) == len
      if same and nf > 0 then
        local vals = redis.call('HMGET', key, unpack(fields))
        for j = 1, nf do
          if not vals[j] then
            same = false
            break
          end
        end
        if same and kind == 'hash' then
          -- Equal joins of NUL-free values mean equal values.
          same = table.concat(vals, '\0') == ARGV[a]
        elseif same then
          for j = 1, nf do vals[j] = #vals[j] .. ':' .. vals[j] end
          same = redis.sha1hex(table.concat(vals)) == ARGV[a]
        end
      end
      a = a + 1
    elseif kind == 'string' then
      same = redis.pcall('GET', key) == ARGV[a]
      a = a + 1
    elseif kind == 'strd' then
      local n, digest = tonumber(ARGV[a + 1]), ARGV[a + 2]
      same = redis.pcall('STRLEN', key) == tonumber(ARGV[a])
      if same and n > 0 then
        same = redis.sha1hex(redis.call('GETRANGE', key, 0, n - 1)) == digest
      end
      a = a + 3
    else
      local want, size = ARGV[a], ARGV[a + 1]
      local t = redis.call('TYPE', key)['ok']
      same = t == want
      if same and size ~= '' and length_of[t] then
        same = redis.call(length_of[t], key) == tonumber(size)
      end
      a = a + 2
    end
    local live = tonumber(ARGV[a])
    a = a + 1
    if same and no_ttl == '1' then
      same = redis.call('PTTL', key) == -1
    end
    if same and live > 0 and now < live then
      out[i - CANDIDATES + 1] = 2
    elseif same and not doomed[key] then -- a key given twice goes once
      doomed[key] = true
      gone[#gone + 1] = key
      out[i - CANDIDATES + 1] = 1
    else
      out[i - CANDIDATES + 1] = 0
    end
  end
end
-- One UNLINK for the lot: the script is atomic, so deleting at its end is
-- deleting at each check, for one command's overhead instead of one a key.
-- It is the script's one write and its last command: an error reply says
-- nothing was deleted (purge.go counts on it), a refused UNLINK included.
if #gone > 0 then
  if redis.acl_check_cmd and not redis.acl_check_cmd('UNLINK', unpack(gone)) then
    return redis.error_reply("NOPERM this user has no permissions to run the 'unlink' command: the re-check deleted none of its keys")
  end
  redis.call('UNLINK', unpack(gone))
end
return out
