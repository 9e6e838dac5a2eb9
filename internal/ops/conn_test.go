package ops

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
)

func TestConnectProbesStandalone(t *testing.T) {
	c, _ := testConn(t)
	if c.Caps.Cluster || c.Caps.Mode != "standalone" {
		t.Fatalf("caps = %+v, want standalone", c.Caps)
	}
	if c.Caps.Version == "" {
		t.Fatal("no version probed")
	}
}

func TestConnectErrorsAreClassified(t *testing.T) {
	ctx := context.Background()
	_, err := Connect(ctx, ConnConfig{URL: "redis://127.0.0.1:1/0", Timeout: time.Second})
	if got := exit.Code(err); got != exit.Unavailable {
		t.Errorf("refused: code %d (%v), want %d", got, err, exit.Unavailable)
	}
	_, err = Connect(ctx, ConnConfig{URL: "http://u:hunter2@x/0"})
	if got := exit.Code(err); got != exit.Config {
		t.Errorf("bad URL: code %d (%v), want %d", got, err, exit.Config)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("password leaked into %q", err)
	}
}

func TestConnectWrongPassword(t *testing.T) {
	srv := startServer(t, "requirepass s3cret")
	ctx := context.Background()
	_, err := Connect(ctx, ConnConfig{URL: srv.URL, Timeout: time.Second})
	if got := exit.Code(err); got != exit.Permission {
		t.Errorf("no password: code %d (%v)", got, err)
	}
	_, err = Connect(ctx, ConnConfig{URL: srv.URL, Password: "nope", Timeout: time.Second})
	if got := exit.Code(err); got != exit.Permission {
		t.Errorf("wrong password: code %d (%v)", got, err)
	}
	c, err := Connect(ctx, ConnConfig{URL: srv.URL, Password: "s3cret", Timeout: time.Second})
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	c.Close()
}

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
