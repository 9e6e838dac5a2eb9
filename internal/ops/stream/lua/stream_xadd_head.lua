-- xadd_head: XADD's arguments before IDMP (or the ID) and the fields, the
-- same for every item of a call, from the call's typed arguments (STREAM,
-- NOMK, TRIM, TRIM_OP, THRESHOLD, LIMIT): the stream, NOMKSTREAM, the
-- deletion policy (KEEPREF | DELREF | ACKED, or '' for none), the trim.
-- The caller appends the rest.
local function xadd_head(deletion)
  local head = { STREAM }
  if NOMK == '1' then head[#head + 1] = 'NOMKSTREAM' end
  if deletion ~= '' then head[#head + 1] = deletion end
  if TRIM ~= '' then
    head[#head + 1], head[#head + 2], head[#head + 3] = TRIM, TRIM_OP, THRESHOLD
    if LIMIT ~= '' then head[#head + 1], head[#head + 2] = 'LIMIT', LIMIT end
  end
  return head
end
