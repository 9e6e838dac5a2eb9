-- native_one: a single native add in one call, the upgrade guard's check
-- and XADD ... IDMP, nothing else (docs/speed.md: A single add). STATE:
-- the stream's two emulated state keys (none for a cluster name no state
-- key can share a slot with). OUTCOMES '1': tell a duplicate, by XINFO
-- STREAM's iids-duplicates before and after, and whether its original is
-- still in the stream. Every check runs before the XADD, the one write;
-- a command's error reply is returned in the server's words (pcall; an
-- ACL refusal as the server words it outside a script, NOPERM ...).
-- Reply: 'H' when the stream holds emulated state, nil when NOMKSTREAM
-- found no stream (nothing written either way); else { ID, 1 when a
-- duplicate, 1 when its original is still in the stream }.
local function refusal(r)
  if type(r) ~= 'table' then return nil end
  r.err = (string.gsub(r.err, '^ERR ACL failure in script: ', 'NOPERM '))
  return r
end
if #KEYS > STATE then
  local held = redis.pcall('EXISTS', KEYS[STATE], KEYS[STATE + 1])
  if refusal(held) then return held end
  if held > 0 then return 'H' end
end
local function duplicates()
  local info = redis.pcall('XINFO', 'STREAM', STREAM)
  if info.err then
    if string.find(info.err, 'no such key', 1, true) then return 0 end
    return nil, refusal(info)
  end
  return to_table(info)['iids-duplicates'] or 0
end
local before = 0
if OUTCOMES == '1' then
  local refused
  before, refused = duplicates()
  if refused then return refused end
  if not redis.acl_check_cmd('XRANGE', STREAM, '-', '+') then
    return redis.error_reply("NOPERM this user has no permissions to run the 'xrange' command")
  end
end
local xadd = xadd_head(DELETION)
if AUTO == '1' then
  xadd[#xadd + 1], xadd[#xadd + 2] = 'IDMPAUTO', PID
else
  xadd[#xadd + 1], xadd[#xadd + 2], xadd[#xadd + 3] = 'IDMP', PID, IID
end
xadd[#xadd + 1] = '*'
for i = FIELDS, #ARGV do xadd[#xadd + 1] = ARGV[i] end
local id = redis.pcall('XADD', unpack(xadd))
if refusal(id) then return id end
if not id then return nil end
if OUTCOMES ~= '1' then return { id, 0, 0 } end
if duplicates() <= before then return { id, 0, 0 } end
return { id, 1, #redis.call('XRANGE', STREAM, id, id) }
