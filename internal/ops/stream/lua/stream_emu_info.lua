-- Emulated XINFO STREAM view, read-only. Reply: nil when the stream does not
-- exist, else {mode, duration, maxsize, iids-added, iids-duplicates, now-ms,
-- length, last-generated-id, entries-added (-1 unknown), first-id, last-id,
-- then pid, live-iids pairs for the pids with live iids}.

local t = key_type(STREAM)
if t == 'none' then return false end
if t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local m = load_meta()
local err = conflict(m)
if err then return err end

local info = xinfo()
local mode = 'emulated'
if not m.owner or stale(info, m) then
  mode, m = 'none', fresh_meta()
end
local now = now_ms()
local first, last = info['first-entry'], info['last-entry']
local out = { mode, m.duration, m.maxsize, m.added, m.dups, now, info['length'],
  info['last-generated-id'], info['entries-added'] or -1,
  first and first[1] or '', last and last[1] or '' }
if mode == 'emulated' then
  local dur_ms = m.duration * 1000
  for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
    local c = live_count(IDS_PREFIX .. pid, ORDER_PREFIX .. pid, dur_ms, now)
    if c > 0 then out[#out + 1], out[#out + 2] = pid, c end
  end
end
return out
