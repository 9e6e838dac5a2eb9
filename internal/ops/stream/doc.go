// Package stream does idempotent stream production (docs/idmp.md): XADD IDMP,
// XCFGSET and the XINFO IDMP view, natively through go-redis on servers that
// have it, and emulated with atomic Lua (lua/stream_*.lua) on servers that
// do not, by the same rules R1-R15 in both modes. It owns the emulated state
// (its layout is in internal/idmp). It never prints and knows nothing of
// claims or of other libraries' records.
package stream
