package exec

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// BenchmarkRunLines is idmpctl exec reading XADD IDMP lines on a native
// server (make bench's exec-native row, without the process and the
// terminal's output): b.N lines, in one session.
func BenchmarkRunLines(b *testing.B) {
	srv := redistest.NewWith(b, redistest.Options{Unix: true, Binary: redistest.RequireNative(b)})
	conn := redistest.Connect(b, srv.URL)
	var in bytes.Buffer
	for i := range b.N {
		fmt.Fprintf(&in, "XADD s IDMP p1 i-%d * f v%d\n", i, i)
	}
	var out []byte
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeNative,
		Emit: func(r resp.Reply, _ bool) { out = render.AppendReplyRaw(out[:0], r) }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	err = RunLines(context.Background(), s, &in)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSplitLine splits a line as RunLines does, into a reused array.
func BenchmarkSplitLine(b *testing.B) {
	b.ReportAllocs()
	var words []string
	for range b.N {
		var err error
		if words, err = appendSplit(words[:0], "XADD s IDMP p1 i-12345 * f v12345\n"); err != nil {
			b.Fatal(err)
		}
	}
}
