-- Emulated XINFO STREAM view, read-only. Reply: nil when the stream does not
-- exist, else {mode, duration, maxsize, iids-added, iids-duplicates, now-ms,
-- length, last-generated-id, entries-added (-1 unknown), first-id, last-id,
-- inconsistency ('' none: what of the state is missing), the number of
-- liveness tokens among the stream's groups (idmpctl's, not the user's),
-- 1 when the state has a token of its own (else R13 rests on the
-- snapshot), then pid, live-iids pairs for the pids with live iids}.

local t = key_type(STREAM)
if t == 'none' then return false end
if t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local m = load_meta()
local err = conflict(m)
if err then return err end

local info = xinfo()
local mode = 'emulated'
-- A state with a part missing (evicted, or deleted by hand) is reported as
-- such: dedupe may still act on what is left.
local problems = {}
local has_pids = redis.call('EXISTS', PIDS) == 1
if not m.owner then
  if has_pids then
    problems[1] = 'the settings hash ' .. META .. ' is missing (settings and counters shown are the defaults)'
  else
    mode = 'none'
  end
  m = fresh_meta()
elseif stale(info, m) then
  mode, m = 'none', fresh_meta()
end
local now = now_ms()
local first, last = info['first-entry'], info['last-entry']
local out = { mode, m.duration, m.maxsize, m.added, m.dups, now, info['length'],
  info['last-generated-id'], info['entries-added'] or -1,
  first and first[1] or '', last and last[1] or '', '', 0, 0 }
if mode == 'emulated' and m.gen then out[14] = 1 end
-- The tokens among its groups (XINFO GROUPS when it has any).
if (info['groups'] or 0) > 0 and not (redis.acl_check_cmd and not redis.acl_check_cmd('XINFO', 'GROUPS', STREAM)) then
  local groups = redis.pcall('XINFO', 'GROUPS', STREAM)
  if type(groups) == 'table' and not groups.err then
    for _, g in ipairs(groups) do
      local name = to_table(g)['name']
      if name and #name == #TOKEN_PREFIX + 12 and string.match(name, '^idmpctl:[0-9a-f]+$') then
        out[13] = out[13] + 1
      end
    end
  end
end
if mode == 'emulated' then
  local scard = redis.call('SCARD', PIDS)
  if m.pids and m.pids ~= scard then
    problems[#problems + 1] = 'the pids set ' .. PIDS .. ' names ' .. scard .. ' of the ' .. m.pids .. ' producers last written'
  end
  local dur_ms, broken = m.duration * 1000, 0
  for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
    local ids, order = IDS_PREFIX .. pid, ORDER_PREFIX .. pid
    local hlen, llen = redis.call('HLEN', ids), redis.call('LLEN', order)
    if hlen ~= llen then
      broken = broken + 1
      if broken <= 3 then
        problems[#problems + 1] = 'producer ' .. string.format('%q', pid) .. ' has ' .. hlen .. ' iids but ' .. llen .. ' in its order list'
      end
    end
    local c = live_count(ids, order, dur_ms, now, m.unordered)
    if c > 0 then out[#out + 1], out[#out + 2] = pid, c end
  end
  if broken > 3 then problems[#problems + 1] = (broken - 3) .. ' more producers likewise' end
  out[12] = table.concat(problems, '; ')
end
return out
