package consume_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/consume"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// An entry too big for the dead-letter add in this mode (more field/value
// arguments than the emulation's XADD from Lua takes) is refused for its
// own size: it stays pending, exhausted, with a warning, and the run goes
// on to the next entry, which is dead-lettered. Before, the refusal
// stopped the run at that entry, at every run: the group was stuck.
func TestDeadLetterTooBigGoesOn(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	args := []string{"XADD", "s", "1-0"}
	for i := range idmp.MaxEmulatedFieldArgs / 2 {
		args = append(args, fmt.Sprint("f", i), "v")
	}
	if _, err := srv.Do(args...); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("XADD", "s", "2-0", "a", "1"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	outcomes := map[string]consume.Outcome{}
	var warnings []string
	_, err := consume.Run(context.Background(), conn, consume.Params{Stream: "s", Group: "g", Consumer: "c", Create: true,
		DeadLetter: "dead", Workers: 1, Lease: time.Minute, MaxAttempts: 1, UntilEmpty: true, Block: 10 * time.Millisecond,
		Command: []string{"sh", "-c", "cat >/dev/null; exit 3"}, Output: io.Discard},
		func(r consume.Result) { mu.Lock(); outcomes[r.ID] = r.Outcome; mu.Unlock() },
		func(w string) { mu.Lock(); warnings = append(warnings, w); mu.Unlock() })
	if err != nil {
		t.Fatalf("the run stopped: %v", err)
	}
	if outcomes["2-0"] != consume.DeadLettered {
		t.Errorf("2-0: %q, want dead-lettered (outcomes %v)", outcomes["2-0"], outcomes)
	}
	if emulated := !redistest.Caps(t, conn).NativeIDMP; emulated {
		if outcomes["1-0"] != consume.Exhausted || len(warnings) != 1 || !strings.Contains(warnings[0], "1-0") {
			t.Errorf("1-0: %q, warnings %q: want exhausted, with a warning naming it", outcomes["1-0"], warnings)
		}
	} else if outcomes["1-0"] != consume.DeadLettered {
		t.Errorf("1-0 (native: no bound): %q, want dead-lettered", outcomes["1-0"])
	}
}
