package redisconn

import "testing"

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/0":  "redis://u:xxxxx@h:1/0",
		"redis://h:1/0":       "redis://h:1/0",
		"redis://:pw@h/0":     "redis://:xxxxx@h/0",
		"red is://u:pw@h%zz/": "red is://u:xxxxx@h%zz/",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
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
