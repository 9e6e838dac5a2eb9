-- steps(KEYS: one key per step; ARGV: mode, then per step its verb, the
-- number of its arguments and the arguments): many claim steps in one call
-- of a standalone server, in order, at the one server time. Each step is
-- the verb's own function, as its single-key script runs it; an error in a
-- step ends that step only, whose reply is then {'error', message}.
local VERBS = { acquire = acquire, renew = renew, complete = complete, fail = fail }
local now = now_ms()
local out = {}
local a = 2
for i, key in ipairs(KEYS) do
  local verb, n = ARGV[a], tonumber(ARGV[a + 1])
  local ok, res = pcall(VERBS[verb], key, now, unpack(ARGV, a + 2, a + 1 + n))
  if not ok then
    if type(res) == 'table' and res.err then res = res.err end
    res = { 'error', tostring(res) }
  end
  out[i] = res
  a = a + 2 + n
end
return out
