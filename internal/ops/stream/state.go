package stream

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
)

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
