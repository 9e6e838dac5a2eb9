package exec

// The ops of emulated mode that follow Redis 8.6.3 beyond XADD, XCFGSET
// and XINFO STREAM (issue 22).
const (
	OpXInfoGroups Op = iota + 64 // XINFO GROUPS key: without the liveness tokens of emulated state
)
