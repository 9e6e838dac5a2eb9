-- idmpctl migrate: moves a stream's emulated IDMP state into the native
-- tracking of a Redis 8.6.2+ server, atomically (one call per stream):
-- the settings with XCFGSET first (while native tracking is empty, so
-- that it clears nothing), then XIDMPRECORD per live (pid, iid) whose
-- entry still exists, oldest first (Redis appends to a producer's list),
-- then the emulated state of exactly what moved, or expired, goes. What
-- cannot move stays emulated (the guard consults it until it expires):
-- iids whose entry was trimmed or deleted (XIDMPRECORD needs the entry),
-- and every live iid while native tracking already holds iids (Redis
-- would put the old iids after newer ones, and evict those first).
--
-- Arguments (migrateArgs): stream, meta hash, pids set (stream_common.lua);
-- then KEYS[PID_KEYS + 2(j-1)], KEYS[PID_KEYS + 2j - 1]: the ids hash and
-- order list of pid j. DRY: '1' for a dry run (nothing written). NPIDS,
-- then from ARGV[REST] the pids (every member of the pids set when the
-- caller read it); then nrec, then per record: pid index, iid, the iid to
-- record natively (for an IDMPAUTO iid, the one Redis derives from the
-- entry's fields), the entry ID the caller read; last, the server's
-- native defaults (CONFIG GET stream-idmp-duration, -maxsize; 0 0 when
-- they cannot be read: the emulated settings then never replace the
-- native ones).
-- Only the iids the caller vetted (the same entry ID here) are recorded.
-- Reply: {'retry'} the pids set names a pid the caller did not read;
-- {'old'} the server has no XIDMPRECORD; false: no stream;
-- else {status, settings, duration, maxsize, native duration, native
-- maxsize, recorded, dropped, native iids-tracked, then per iid kept:
-- pid, iid, entry ID, expires (ms), why ('missing' | 'native' | 'changed'
-- | 'full')}. status: 'none' no emulated state; 'foreign' the state is
-- another name's ("s" and "{s}"); 'stale' the state was a deleted
-- stream's (dropped); 'done' nothing emulated is left; 'kept' some is.
-- settings: 'equal', 'set' (XCFGSET: the native ones were the server's
-- defaults; each the wider of them and the emulated one), 'native' (the
-- native settings stay, at least as wide as the emulated ones), 'blocked' (they differ, and native tracking
-- holds iids, which XCFGSET would clear, or the stream's own native
-- settings are narrower: nothing moves).

------------------------------------------------------------------------
-- Part 1: everything that can fail. Nothing is written before part 2.
------------------------------------------------------------------------

local argv = ARGV
local dry = DRY == '1'
local npids = tonumber(NPIDS)
if not npids or #KEYS ~= PID_KEYS - 1 + 2 * npids then
  return redis.error_reply('ERR idmpctl: malformed migrate call (' .. #KEYS .. ' keys)')
end
local a = REST + npids
local nrec = tonumber(argv[a])
if not nrec or a + 4 * nrec ~= REST_LAST then
  return redis.error_reply('ERR idmpctl: malformed migrate call (' .. #argv .. ' arguments)')
end

local r = redis.pcall('XIDMPRECORD')
if type(r) == 'table' and r.err and string.find(r.err, 'nknown', 1, true) then return { 'old' } end

local t = key_type(STREAM)
if t == 'none' then return false end
if t ~= 'stream' then return redis.error_reply(WRONGTYPE) end
local err = bad_type(META, 'hash') or bad_type(PIDS, 'set')
for j = 1, npids do
  if err then break end
  err = bad_type(KEYS[PID_KEYS + 2 * j - 2], 'hash') or bad_type(KEYS[PID_KEYS + 2 * j - 1], 'list')
end
if err then return err end

local info = xinfo()
local nd, nm = tonumber(info['idmp-duration']), tonumber(info['idmp-maxsize'])
local ntracked = info['iids-tracked'] + info['pids-tracked']
local has_meta, has_pids = redis.call('EXISTS', META) == 1, redis.call('EXISTS', PIDS) == 1
if not has_meta and not has_pids then return { 'none', '', 0, 0, nd, nm, 0, 0, info['iids-tracked'] } end
local m = load_meta()
if m.owner and m.owner ~= OWNER then
  return { 'foreign', '', m.duration, m.maxsize, nd, nm, 0, 0, info['iids-tracked'] }
end
local declared = {}
for j = 1, npids do declared[argv[REST + j - 1]] = j end
for _, pid in ipairs(redis.call('SMEMBERS', PIDS)) do
  if not declared[pid] then return { 'retry' } end
end

local vetted = {}
for k = 0, nrec - 1 do
  local b = a + 1 + 4 * k
  local j = tonumber(argv[b])
  if not j or j < 1 or j > npids then return redis.error_reply('ERR idmpctl: malformed migrate record') end
  vetted[j .. ':' .. argv[b + 1]] = { native = argv[b + 2], id = argv[b + 3] }
end

local stale_state = stale(info, m)
-- The emulated settings replace the native ones only while those are the
-- server's defaults (the last two arguments, CONFIG GET stream-idmp-*), as
-- the guard carries them (carried_settings): the wider of the two, each,
-- set ('set'). Native settings at least as wide as the emulated ones take
-- the iids as they are ('native'); narrower ones, given to the stream,
-- would shorten their windows (a recorded iid lives IDMP-DURATION from
-- its record), so nothing moves ('blocked').
local settings, sd, sm = 'equal', nil, nil
if nd ~= m.duration or nm ~= m.maxsize then
  if ntracked == 0 and m.owner and m.duration >= 1 and m.duration <= MAX_DURATION and m.maxsize >= 1 and m.maxsize <= MAX_MAXSIZE then
    sd, sm = carried_settings(nd, nm, m)
  end
  if sd then
    settings = 'set'
  elseif ntracked == 0 and nd >= m.duration and nm >= m.maxsize then
    settings = 'native'
  elseif ntracked == 0 and m.owner and not stale_state and not (DEFAULTS_KNOWN and SERVER_DURATION >= 1) then
    -- Narrower native settings, and defaults the caller could not read
    -- (0 0: an ACL without CONFIG GET): defaults, which the emulated
    -- settings go over, or the stream's own, which stay? Deciding
    -- 'blocked' would delete the emulated settings with the state once
    -- nothing else is left, and the stream would keep the narrower ones.
    return redis.error_reply('NOPERM this user may not run CONFIG GET stream-idmp-*, which the migration needs: ' ..
      'the stream\'s native IDMP settings (' .. nd .. ' s, ' .. nm .. ') are narrower than its emulated ones (' ..
      m.duration .. ' s, ' .. m.maxsize .. '), and only the server\'s defaults tell whether they are the stream\'s ' ..
      'own: nothing was written')
  else
    settings = 'blocked'
  end
end
if stale_state then settings = '' end
local carry = not stale_state and ntracked == 0 and settings ~= 'blocked'
local maxsize = (settings == 'set') and sm or nm

local now = now_ms()
local dur_ms = m.duration * 1000
local checks = { { 'XIDMPRECORD', STREAM, 'p', 'i', '0-1' }, { 'XCFGSET', STREAM, 'IDMP-DURATION', '1' },
  { 'HSET', META, 'f', 'v' }, { 'DEL', META }, { 'SREM', PIDS, 'm' }, { 'DEL', PIDS } }
-- Per pid: what is recorded (in entry order), kept and dropped.
local per, kept_out, nrecorded, ndropped = {}, {}, 0, 0
local kept_total = 0
for j = 1, npids do
  local pid, ids, order = argv[REST + j - 1], KEYS[PID_KEYS + 2 * j - 2], KEYS[PID_KEYS + 2 * j - 1]
  local all = to_table(redis.call('HGETALL', ids))
  local live = {}
  local p = { ids = ids, order = order, pid = pid, record = {}, keep = {}, drop = {}, llen = redis.call('LLEN', order),
    has_ids = redis.call('EXISTS', ids) == 1 }
  for iid, id in pairs(all) do
    if stale_state or id_ms(id) + dur_ms <= now then
      p.drop[#p.drop + 1] = iid
    else
      live[#live + 1] = { iid = iid, id = id }
    end
  end
  table.sort(live, function(x, y) return id_less(x.id, y.id) end)
  local seen, nrecord = {}, 0
  for _, e in ipairs(live) do
    local why
    local v = vetted[j .. ':' .. e.iid]
    if #redis.call('XRANGE', STREAM, e.id, e.id) == 0 then
      why = 'missing'
    elseif not carry then
      why = 'native'
    elseif not v or v.id ~= e.id then
      why = 'changed'
    elseif seen[v.native] then
      why = 'changed'
    end
    if why then
      p.keep[#p.keep + 1] = e
      kept_out[#kept_out + 1] = { pid, e.iid, e.id, id_ms(e.id) + dur_ms, why }
    else
      seen[v.native] = true
      nrecord = nrecord + 1
      p.record[nrecord] = { iid = e.iid, native = v.native, id = e.id }
    end
  end
  -- More than the producer's maxsize (the emulation never keeps more):
  -- the oldest stay emulated rather than be evicted natively.
  while #p.record > maxsize do
    local e = table.remove(p.record, 1)
    p.keep[#p.keep + 1] = e
    kept_out[#kept_out + 1] = { pid, e.iid, e.id, id_ms(e.id) + dur_ms, 'full' }
  end
  table.sort(p.keep, function(x, y) return id_less(x.id, y.id) end)
  for _, e in ipairs(p.record) do p.drop[#p.drop + 1] = e.iid end
  nrecorded, ndropped = nrecorded + #p.record, ndropped + #p.drop - #p.record
  kept_total = kept_total + #p.keep
  per[j] = p
  for _, c in ipairs({ { 'HDEL', ids, 'f' }, { 'DEL', ids }, { 'RPUSH', order, 'x' }, { 'LTRIM', order, '0', '-1' }, { 'DEL', order } }) do
    checks[#checks + 1] = c
  end
end
-- A dry run checks them too: it must not promise what the run refuses.
err = denied(checks)
if err then return err end

local status = 'kept'
if stale_state then status = 'stale' elseif kept_total == 0 then status = 'done' end
-- Once nothing emulated is left, the state's liveness token (a consumer
-- group on the stream) goes with it, when the user may destroy it; a
-- token without state is otherwise harmless.
local drop_token = status == 'done' and m.gen ~= nil and
  (not redis.acl_check_cmd or redis.acl_check_cmd('XGROUP', 'DESTROY', STREAM, TOKEN_PREFIX .. m.gen)) and
  token_alive(m.gen) == true
local out = { status, settings, m.duration, m.maxsize, nd, nm, nrecorded, ndropped, info['iids-tracked'] }
for _, k in ipairs(kept_out) do
  for i = 1, 5 do out[#out + 1] = k[i] end
end
if dry then return out end

------------------------------------------------------------------------
-- Part 2: the writes, none of which can fail. The settings first, then
-- the records, then what of the emulated state they cover (or expired)
-- goes: a key is either rewritten or deleted, never both.
------------------------------------------------------------------------

if settings == 'set' then
  redis.call('XCFGSET', STREAM, 'IDMP-DURATION', sd, 'IDMP-MAXSIZE', sm)
  out[5], out[6] = sd, sm
end
for _, p in ipairs(per) do
  for _, e in ipairs(p.record) do redis.call('XIDMPRECORD', STREAM, p.pid, e.native, e.id) end
end
local gone, left = {}, 0
for _, p in ipairs(per) do
  if #p.keep == 0 then
    local dk = {}
    if p.has_ids then dk[#dk + 1] = p.ids end
    if p.llen > 0 then dk[#dk + 1] = p.order end
    if #dk > 0 then redis.call('DEL', unpack(dk)) end
    gone[#gone + 1] = p.pid
  else
    left = left + 1
    if #p.drop > 0 then bulk('HDEL', p.ids, p.drop) end
    local iids = {}
    for i, e in ipairs(p.keep) do iids[i] = e.iid end
    bulk('RPUSH', p.order, iids)
    if p.llen > 0 then redis.call('LTRIM', p.order, p.llen, -1) end
  end
end
if drop_token then redis.call('XGROUP', 'DESTROY', STREAM, TOKEN_PREFIX .. m.gen) end
if left == 0 then
  local dk = {}
  if has_meta then dk[#dk + 1] = META end
  if has_pids then dk[#dk + 1] = PIDS end
  redis.call('DEL', unpack(dk))
else
  bulk('SREM', PIDS, gone)
  if has_meta then redis.call('HSET', META, 'pids', left) end
end
return out
