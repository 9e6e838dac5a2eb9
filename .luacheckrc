-- luacheck's settings for idmpctl's Lua scripts (internal/ops/*/lua/*.lua).
--
-- The scripts run inside Redis (Lua 5.1), assembled from parts: the
-- redisconn prelude, the IDMP limits of internal/idmp, a package's shared
-- helpers (stream_common.lua, claim_lib.lua) and the script's own file.
-- make test lints each script as the server gets it, assembled
-- (TestLuacheck in internal/ops), so a name a part uses must be defined by
-- a part before it: no part is linted alone, and no prelude name is
-- declared here.
std = 'lua51'

-- What Redis gives a script. A script may not set a global (Redis refuses).
read_globals = {
  'redis', 'KEYS', 'ARGV',
  'cjson', 'cmsgpack', 'bit', 'struct',
}

-- Redis's long error messages and the scripts' comments run long.
max_line_length = false
