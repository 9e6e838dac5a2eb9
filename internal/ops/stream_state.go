package ops

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// StateLayout names the keys that hold a stream's emulated IDMP state. They
// all share the stream's cluster slot: Base is the stream name when it has a
// valid hash tag, "{stream}" otherwise.
//
//	<Base>:idmp              hash: settings, lifetime counters, owner, stream snapshot (no TTL)
//	<Base>:idmp:pids         set: pids that hold state (PEXPIRE duration+slack)
//	<Base>:idmp:ids:<pid>    hash: iid -> original entry ID (PEXPIRE duration+slack)
//	<Base>:idmp:order:<pid>  list: the pid's iids, oldest first (PEXPIRE duration+slack)
type StateLayout struct {
	Stream      string
	Base        string
	Meta        string
	PIDs        string
	IDsPrefix   string // + pid
	OrderPrefix string // + pid
}

// IDs is the hash of one pid's tracked iids (iid -> entry ID).
func (l StateLayout) IDs(pid string) string { return l.IDsPrefix + pid }

// Order is the list of one pid's tracked iids in insertion order.
func (l StateLayout) Order(pid string) string { return l.OrderPrefix + pid }

// StateKeys derives the emulated state's key names for stream. In cluster
// mode a name that holds '}' without a valid hash tag is refused: no suffix
// can make a key that hashes to its slot.
func StateKeys(stream string, cluster bool) (StateLayout, error) {
	base := stream
	if !hasHashTag(stream) {
		if cluster && strings.Contains(stream, "}") {
			e := exit.New(exit.Usage, "emulated IDMP on stream "+quote(stream),
				"the name holds '}' but no valid hash tag, so no state key can share its cluster slot")
			e.Hint = "use a hash-tagged stream name such as " + quote("{"+strings.ReplaceAll(stream, "}", "_")+"}") +
				", or a server with native IDMP (Redis 8.6+)"
			return StateLayout{}, e
		}
		base = "{" + stream + "}"
	}
	meta := base + ":idmp"
	return StateLayout{
		Stream:      stream,
		Base:        base,
		Meta:        meta,
		PIDs:        meta + ":pids",
		IDsPrefix:   meta + ":ids:",
		OrderPrefix: meta + ":order:",
	}, nil
}

// hasHashTag applies Redis Cluster's rule: the first '{', then the first '}'
// after it, with at least one byte between them.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	closing := strings.IndexByte(key[open+1:], '}')
	return closing > 0
}

// AutoIID derives the emulated IDMPAUTO iid from flat field/value pairs: the
// SHA-256 of the sorted SHA-256 digests of each length-prefixed pair, first 16
// bytes, hex. The same pairs in any order give the same iid; a different or an
// extra pair (even a repeated one) gives another. It differs from the iids
// Redis 8.6 derives (XXH3-128), so emulated and native auto iids never match.
func AutoIID(fields []string) string {
	digests := make([][sha256.Size]byte, 0, len(fields)/2)
	var n [binary.MaxVarintLen64]byte
	for i := 0; i+1 < len(fields); i += 2 {
		h := sha256.New()
		for _, s := range fields[i : i+2] {
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
			h.Write([]byte(s))
		}
		var d [sha256.Size]byte
		h.Sum(d[:0])
		digests = append(digests, d)
	}
	slices.SortFunc(digests, func(a, b [sha256.Size]byte) int { return strings.Compare(string(a[:]), string(b[:])) })
	h := sha256.New()
	for _, d := range digests {
		h.Write(d[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
