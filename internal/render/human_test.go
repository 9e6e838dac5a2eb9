package render

import (
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/bytesize"
)

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 461001: "461,001",
		1000000: "1,000,000", -1234: "-1,234", -999: "-999"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestN(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{N(1, "line"), "1 line"},
		{N(0, "line"), "0 lines"},
		{N(1000000, "line"), "1,000,000 lines"},
		{N(1, "key"), "1 key"},
		{N(2, "entry", "entries"), "2 entries"},
		{N(1, "entry", "entries"), "1 entry"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                      "0s",
		850 * time.Millisecond:                 "850ms",
		time.Second:                            "1s",
		59*time.Second + 999*time.Millisecond:  "59s",
		time.Minute:                            "1m",
		1000 * time.Second:                     "16m40s",
		4*time.Minute + 59900*time.Millisecond: "4m59s",
		time.Hour:                              "1h",
		90 * time.Minute:                       "1h30m",
		24 * time.Hour:                         "24h",
		47*time.Hour + 59*time.Minute:          "47h59m",
		48 * time.Hour:                         "2d",
		7*24*time.Hour - time.Hour:             "6d23h",
		400 * 24 * time.Hour:                   "400d",
		-90 * time.Second:                      "-1m30s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{1: "1 B", 512: "512 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB", 1 << 30: "1.0 GiB"} {
		if got := bytesize.Format(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
