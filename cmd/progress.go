package cmd

import (
	"io"

	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/render"
)

// startProgress starts the progress line of long work (xadd --batch,
// inspect --match, purge --match) on stderr. It is drawn only when
//
//   - stderr is a terminal (or IDMPCTL_FORCE_TTY is set),
//   - the output is not -o json (a stream of objects for programs), and
//   - stdout is not a terminal too while the command prints its results on
//     it line by line as it goes (linesOut: xadd --batch, and -o raw scans
//     and purges): those lines already show the progress, and a status line
//     redrawn between them would garble them.
//
// The line is drawn at most ten times a second, and only once the work has
// taken 250 ms (progress.Bar). Until stop is called, everything else the
// command writes to stderr (warnings such as xadd --batch's retries,
// status lines) erases the line first, so nothing is printed over it.
// stop erases the line for good and restores stderr; call it before the
// summary (it may be called again, deferred).
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
