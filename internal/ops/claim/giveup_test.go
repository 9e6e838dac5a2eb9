package claim

import (
	"errors"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// TestGiveUpUnprinted: a claim whose token could not be written is given
// up: a free key is released; a retry after FAILED is recorded FAILED
// again, its token and attempts kept. The error is the lost output's, with
// the claim named and what became of it.
func TestGiveUpUnprinted(t *testing.T) {
	ctx, c := claimClient(t)
	lost := &exit.Error{Code: exit.Internal, Err: errors.New("cannot write the output: no space left on device")}

	res := mustAcquire(t, ctx, c, acquireParams("free", "w1"), Acquired)
	err := GiveUpUnprinted(ctx, c, "free", 0, res, lost)
	var e *exit.Error
	if !errors.As(err, &e) || e.Code != exit.Internal || e.What != `claim acquire "free"` || !strings.HasSuffix(e.Hint, "was released: the key is free") {
		t.Errorf("free key: %#v", err)
	}
	if n := c.Client().Exists(ctx, "free").Val(); n != 0 {
		t.Errorf("free key: still there after it was given up")
	}

	first := mustAcquire(t, ctx, c, acquireParams("retried", "w1"), Acquired)
	if _, err := Fail(ctx, c, "retried", first.Token, "boom", 0, false); err != nil {
		t.Fatal(err)
	}
	res = mustAcquire(t, ctx, c, acquireParams("retried", "w2"), Retry)
	err = GiveUpUnprinted(ctx, c, "retried", 0, res, lost)
	if !errors.As(err, &e) || !strings.HasSuffix(e.Hint, "was recorded FAILED: a redelivery can claim it at once") {
		t.Errorf("retry: %#v", err)
	}
	if h := hash(t, ctx, c, "retried"); h["status"] != StatusFailed || h["error"] != "its token could not be written: given up" || h["attempts"] != "2" {
		t.Errorf("retry: record %v", h)
	}
	if lost.What != "" || lost.Hint != "" {
		t.Errorf("the lost output's error was changed: %#v", lost)
	}
}
