package stream

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
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

// NativeAutoIID is Redis 8.6's IDMPAUTO iid (t_stream.c,
// createIdempotencyHash): per pair XXH3-128 of field, its length (64-bit
// LE) and value, combined by sum and XOR with halves rotated, low half
// first. migrate records emulated IDMPAUTO iids under it for native retries.
func NativeAutoIID(fields []string) string {
	var sumLo, sumHi, xorLo, xorHi uint64
	var buf []byte
	for i := 0; i+1 < len(fields); i += 2 {
		f, v := fields[i], fields[i+1]
		buf = append(buf[:0], f...)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(f)))
		buf = append(buf, v...)
		lo, hi := xxh3Hash128(buf)
		sumLo += lo
		sumHi += hi
		xorLo ^= lo
		xorHi ^= hi
	}
	out := binary.LittleEndian.AppendUint64(nil, sumLo^bits.RotateLeft64(xorHi, 1))
	out = binary.LittleEndian.AppendUint64(out, sumHi^bits.RotateLeft64(xorLo, 1))
	return string(out)
}
