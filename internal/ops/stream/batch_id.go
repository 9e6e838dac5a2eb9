package stream

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// DefaultBatchID is the batch ID without --batch-id: 16 hex digits of the
// SHA-256 of the input's absolute path ("-": stdin), newline, first line.
func DefaultBatchID(input string, firstLine []byte) string {
	if input != "-" {
		if abs, err := filepath.Abs(input); err == nil {
			input = abs
		}
	}
	h := sha256.New()
	h.Write([]byte(input + "\n"))
	h.Write(firstLine)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
