package redisconn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

func TestConnectProbesStandalone(t *testing.T) {
	c, _ := redistest.Conn(t)
	if c.Caps.Cluster || c.Caps.Mode != "standalone" {
		t.Fatalf("caps = %+v, want standalone", c.Caps)
	}
	if c.Caps.Version == "" {
		t.Fatal("no version probed")
	}
}

func TestConnectErrorsAreClassified(t *testing.T) {
	ctx := context.Background()
	_, err := redisconn.Connect(ctx, redisconn.ConnConfig{URL: "redis://127.0.0.1:1/0", Timeout: time.Second})
	if got := exit.Code(err); got != exit.Unavailable {
		t.Errorf("refused: code %d (%v), want %d", got, err, exit.Unavailable)
	}
	_, err = redisconn.Connect(ctx, redisconn.ConnConfig{URL: "http://u:hunter2@x/0"})
	if got := exit.Code(err); got != exit.Config {
		t.Errorf("bad URL: code %d (%v), want %d", got, err, exit.Config)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("password leaked into %q", err)
	}
}

func TestConnectWrongPassword(t *testing.T) {
	srv := redistest.New(t, "requirepass s3cret")
	ctx := context.Background()
	_, err := redisconn.Connect(ctx, redisconn.ConnConfig{URL: srv.URL, Timeout: time.Second})
	if got := exit.Code(err); got != exit.Permission {
		t.Errorf("no password: code %d (%v)", got, err)
	}
	_, err = redisconn.Connect(ctx, redisconn.ConnConfig{URL: srv.URL, Password: "nope", Timeout: time.Second})
	if got := exit.Code(err); got != exit.Permission {
		t.Errorf("wrong password: code %d (%v)", got, err)
	}
	c, err := redisconn.Connect(ctx, redisconn.ConnConfig{URL: srv.URL, Password: "s3cret", Timeout: time.Second})
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	c.Close()
}
