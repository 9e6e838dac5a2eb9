package redisconn

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/0":  "redis://u:xxxxx@h:1/0",
		"redis://h:1/0":       "redis://h:1/0",
		"redis://:pw@h/0":     "redis://:xxxxx@h/0",
		"red is://u:pw@h%zz/": "red is://u:xxxxx@h%zz/",
		"u:pw@host:6379":      "u:xxxxx@host:6379", // no scheme: still no password
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestURLProblem: a URL that does not parse is explained in our words,
// never in the parser's, and never with its password.
func TestURLProblem(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:6379":          "no scheme: write redis://127.0.0.1:6379",
		"u:pw@host:6379":          "no scheme: write redis://u:xxxxx@host:6379",
		"foo://x":                 `scheme "foo": want redis, rediss or unix`,
		"redis://h:1/abc":         "the database is not a number: end the URL with /0 (or ?db=0 for unix://)",
		"unix:///tmp/s.sock?db=x": "the database is not a number: end the URL with /0 (or ?db=0 for unix://)",
		"redis://[::1":            "an IPv6 address needs its closing ']': redis://[::1]:6379",
		"redis://h:abc":           "the port is not a number: redis://host:6379",
		"redis://h:99999/0":       "port 99999 is out of range: want 1 to 65535",
		"rediss://u:pw@h:0":       "port 0 is out of range: want 1 to 65535",
	} {
		_, _, err := ConnConfig{URL: in}.Options()
		if err == nil {
			t.Errorf("%q: no error", in)
			continue
		}
		got := err.Error()
		if !strings.HasSuffix(got, ": "+want) || strings.Contains(got, "pw") || strings.Contains(got, "strconv") || strings.Contains(got, "parse ") {
			t.Errorf("%q: %q, want it to end in %q", in, got, want)
		}
	}
}

func TestMayHaveIDMP(t *testing.T) {
	for _, c := range []struct {
		product, version string
		want             bool
	}{
		{"redis", "7.0.15", false}, {"redis", "8.4.0", false}, {"redis", "8.6.0", true},
		{"redis", "9.0.1", true}, {"valkey", "8.0.1", false}, {"valkey", "9.0.0", true},
		{"redis", "", true}, {"redis", "weird", true},
	} {
		if got := mayHaveIDMP(Capabilities{Product: c.product, Version: c.version}); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.product, c.version, got, c.want)
		}
	}
}
