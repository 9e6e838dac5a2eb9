package exec

import (
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/redistest"
)

// Emulated mode on purpose on a native server (--mode emulated on Redis
// 8.6): XINFO STREAM shows the emulation's IDMP fields once, in place of
// the server's own, which describe tracking the emulation does not use
// (Redis's "XINFO STREAM returns pids-tracked field" read the server's 0).
func TestExecEmulatedXInfoOnNativeServer(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	got := session(t, conn, "XADD s IDMP p1 i1 * f v", "XADD s IDMP p2 i1 * f v", "XINFO STREAM s")
	text := strings.Join(got, "\n")
	if n := strings.Count(text, `"pids-tracked"`); n != 1 {
		t.Fatalf("pids-tracked %d times in\n%s", n, text)
	}
	for i, l := range got {
		if strings.HasSuffix(l, `"pids-tracked"`) {
			if i+1 >= len(got) || !strings.HasSuffix(got[i+1], "(integer) 2") {
				t.Fatalf("pids-tracked is not 2 in\n%s", text)
			}
		}
	}
}
