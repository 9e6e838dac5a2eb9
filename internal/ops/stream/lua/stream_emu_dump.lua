-- DUMP of a key, with the emulated IDMP state of the stream it is: a
-- DUMP payload holds the stream alone, so exec keeps the state beside it
-- for a RESTORE of that payload (stream_emu_restore.lua). Read-only.
--
-- Reply: {} when the key does not exist; {payload} for a key that is not
-- a stream with live emulated state; else {payload, duration, maxsize,
-- iids-added, iids-duplicates, gen ('' none), unordered ('1'|''), npids,
-- then per pid: pid, n, and n iid, entry ID pairs (its live iids, oldest
-- first)}.

local payload = redis.call('DUMP', STREAM)
if not payload then return {} end
if key_type(STREAM) ~= 'stream' then return { payload } end
if bad_type(META, 'hash') or bad_type(PIDS, 'set') then return { payload } end
local m = load_meta()
if m.owner ~= OWNER or stale(xinfo(), m) then return { payload } end

local now, dur_ms = now_ms(), m.duration * 1000
local out = { payload, m.duration, m.maxsize, m.added, m.dups, m.gen or '', m.unordered and '1' or '', 0 }
for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
  local ids, order = IDS_PREFIX .. pid, ORDER_PREFIX .. pid
  if key_type(ids) == 'hash' and key_type(order) == 'list' then
    local n = redis.call('LLEN', order)
    local live = live_count(ids, order, dur_ms, now, m.unordered)
    if live > 0 then
      local iids = redis.call('LRANGE', order, n - live, -1)
      local pairs_at = #out + 3
      out[#out + 1], out[#out + 2] = pid, 0
      for i = 1, #iids, 1000 do
        local chunk = { unpack(iids, i, math.min(i + 999, #iids)) }
        local idv = redis.call('HMGET', ids, unpack(chunk))
        for k = 1, #chunk do
          if idv[k] then
            out[#out + 1], out[#out + 2] = chunk[k], idv[k]
            out[pairs_at - 1] = out[pairs_at - 1] + 1
          end
        end
      end
      out[8] = out[8] + 1
    end
  end
end
return out
