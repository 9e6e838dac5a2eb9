package cmd

import (
	"io"
	"runtime/debug"

	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/render"
)

// startProgress starts the progress line of long work on stderr, drawn
// when stderr is a terminal, the output is not -o json, and not when stdout
// is a terminal too that the command prints results on line by line
// (linesOut): a line redrawn between them would garble them. Until stop,
// other writes to stderr erase the line first; stop erases it for good
// (call it before the summary; again, deferred, is fine).
func startProgress(p *render.Printer, linesOut bool, opts progress.Options) (bar *progress.Bar, stop func()) {
	enabled := p.ErrTTY && p.Format != render.JSON && !(linesOut && p.TTY)
	bar = progress.New(p.Err, enabled, opts)
	if bar == nil {
		return nil, func() {}
	}
	errOut := p.Err
	p.Err = clearFirst{bar: bar, w: errOut}
	return bar, func() {
		bar.Finish()
		p.Err = errOut
	}
}

// clearFirst erases the progress line before each write to stderr.
type clearFirst struct {
	bar *progress.Bar
	w   io.Writer
}

func (c clearFirst) Write(b []byte) (int, error) {
	c.bar.Clear()
	return c.w.Write(b)
}

// bulkGC tunes the collector for bulk work (scans, batches), which
// allocates fast and holds little: collecting at 4x the live heap instead
// of 2x saves much of the collector's work, and a soft limit of 40 MiB keeps
// purge's peak RSS under 64 MB (soft, in bytes). GOGC or GOMEMLIMIT in the
// environment win.
func bulkGC(getenv func(string) string, soft int64) (restore func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(soft)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
