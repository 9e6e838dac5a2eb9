package bytesize

import (
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 40: "40 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		16000: "15.6 KiB", 1 << 20: "1.0 MiB", 104857600: "100.0 MiB",
		1073741824: "1.0 GiB", 1244160000: "1.2 GiB", 1 << 40: "1.0 TiB",
		math.MaxInt64: "8.0 EiB", -2048: "-2.0 KiB",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
