package redisconn

import "testing"

// Versions as servers report them: release candidates, two parts, none.
func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in       string
		want     [3]int
		ok, atL2 bool // parsed; at least 8.6.2
	}{
		{"8.6.3", [3]int{8, 6, 3}, true, true},
		{"8.6.2", [3]int{8, 6, 2}, true, true},
		{"8.6.1-rc1", [3]int{8, 6, 1}, true, false},
		{"8.6", [3]int{8, 6, 0}, true, false},
		{"7.2.4", [3]int{7, 2, 4}, true, false},
		{"255.255.255", [3]int{255, 255, 255}, true, true},
		{"9.0.0", [3]int{9, 0, 0}, true, true},
		{"", [3]int{}, false, false},
		{"8", [3]int{}, false, false},
		{"x.y", [3]int{}, false, false},
	} {
		v, ok := ParseVersion(c.in)
		if ok != c.ok || ok && v != c.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, %v", c.in, v, ok, c.want, c.ok)
		}
		if got := VersionAtLeast(c.in, 8, 6, 2); got != c.atL2 {
			t.Errorf("VersionAtLeast(%q, 8.6.2) = %v, want %v", c.in, got, c.atL2)
		}
	}
}
