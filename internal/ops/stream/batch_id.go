package stream

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// DefaultBatchID is a batch's resume identity when --batch-id is not given:
// the first 16 hex digits of SHA-256 of the input's absolute path ("-" for
// stdin), a newline, and its first line. Re-running the same file resumes
// it (the progress record is keyed by the stream, the pid and this ID);
// another file, or the same name with another first line, is another
// batch.
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
