package cmd

// The Factory: what every command depends on, and the decisions of setup.

import (
	"cmp"
	"context"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/iostreams"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/spf13/cobra"
)

// Factory carries what every command depends on.
type Factory struct {
	// The seams tests replace; IOStreams' terminal facts are made from them.
	In       io.Reader
	Out, Err io.Writer
	Getenv   func(string) string
	IsTTY    func(f any) bool
	// TermWidth is the width in columns of the terminal f is (0: none).
	TermWidth func(f any) int
	Now       func() time.Time

	Printer *render.Printer
	Global  GlobalOptions

	conn       *redisconn.Conn
	io         *iostreams.IOStreams
	outputTold bool                           // the command dealt with its lost output, or failed for it
	started    bool                           // flags parsed: errors from here on are not usage errors
	guard      *claimrun.Guard                // claim run's guard, started before the tree is built (Linux)
	caught     atomic.Value                   // the signal that stopped untilInterrupted's command
	opened     atomic.Pointer[redisconn.Conn] // conn, for the goroutine that closes it on a signal
}

// GlobalOptions are the persistent flags.
type GlobalOptions struct {
	URL, TLSCA, TLSCert, TLSKey             string
	TLSInsecure, Cluster, NoColor, ReadOnly bool
	Timeout                                 time.Duration
	Retries                                 int
	Output                                  string
	Quiet                                   bool // -q: no warnings on stderr (errors still print)
	// redis-cli's -h, -p, -a and -n change the URL's parts (cliURL);
	// cliFlags says which were given.
	Host, Pass string
	Port, DB   int
	cliFlags   map[string]bool
}

// Conn opens the connection on first use.
func (f *Factory) Conn(ctx context.Context) (*redisconn.Conn, error) {
	if f.conn != nil {
		return f.conn, nil
	}
	cfg := redisconn.ConnConfig{
		URL:         cmp.Or(f.Global.URL, f.Getenv("IDMPCTL_URL"), f.Getenv("REDIS_URL"), redisconn.DefaultURL),
		URLFromFlag: f.Global.URL != "",
		TLSCA:       f.Global.TLSCA, TLSCert: f.Global.TLSCert, TLSKey: f.Global.TLSKey,
		TLSInsecure: f.Global.TLSInsecure, Timeout: f.Global.Timeout, Cluster: f.Global.Cluster,
	}
	if len(f.Global.cliFlags) > 0 {
		u, err := cliURL(cfg.URL, f.Global)
		if err != nil {
			return nil, err
		}
		cfg.URL = u
	}
	cfg.Password = cmp.Or(f.Getenv("IDMPCTL_PASSWORD"), f.Getenv("REDISCLI_AUTH"))
	var once sync.Once
	cfg.PasswordNotNeeded = func(error) {
		// As redis-cli does: a warning, then on. It may also say that this
		// is not the server the password was meant for.
		once.Do(func() {
			f.Printer.Warnf("the server asks for no password, so the one from %s was not used: is this the server you meant? (%s)",
				cmp.Or(f.passwordSource(), "the URL"), redisconn.Redact(cfg.URL))
		})
	}
	c, err := redisconn.Open(cfg)
	if err != nil {
		return nil, err
	}
	if f.Printer != nil { // nil: a completion request, which prints no warnings
		for _, w := range c.Warnings {
			f.Printer.Warnf("%s", w)
		}
	}
	f.conn = c
	f.opened.Store(c)
	return c, nil
}

// IOStreams are the run's streams and what is known of them, made once.
func (f *Factory) IOStreams() *iostreams.IOStreams {
	if f.io == nil {
		f.io = iostreams.New(f.In, f.Out, f.Err, f.Getenv, f.IsTTY, f.TermWidth)
	}
	return f.io
}

func (f *Factory) close() {
	if f.conn != nil {
		f.conn.Close()
	}
	f.guard.Release() // one started for a claim run that never ran a command
}

// passwordSource names where the password idmpctl sent came from.
func (f *Factory) passwordSource() string {
	if f.Global.cliFlags["pass"] {
		return "-a"
	}
	raw := cmp.Or(f.Global.URL, f.Getenv("IDMPCTL_URL"), f.Getenv("REDIS_URL"))
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return "the URL"
		}
	}
	for _, env := range []string{"IDMPCTL_PASSWORD", "REDISCLI_AUTH"} {
		if f.Getenv(env) != "" {
			return env
		}
	}
	return "" // none: the URL's user was tried with an empty password
}

// callBound bounds a command that is one call to Redis: the whole call,
// connecting and retries included, takes at most --timeout plus wait
// (--wait-replicas'), so a frozen server costs one --timeout, not one per
// attempt. Long work bounds each round trip instead.
func (f *Factory) callBound(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.Global.Timeout+wait)
}

// hasMetrics is the annotation of the commands that print -o prometheus.
const hasMetrics = "idmpctl/metrics"

// setup runs once flags are parsed: checks, and the output decisions.
func (f *Factory) setup(c *cobra.Command) error {
	// --url "$UNSET" would reach IDMPCTL_URL's server, or localhost's;
	// purge --pid "$UNSET" would forget every producer's iids.
	if err := refuseEmpty(c); err != nil {
		return err
	}
	ios := f.IOStreams()
	tty := ios.IsStdoutTTY()
	format, err := render.ParseFormat(f.Global.Output, tty)
	if err != nil {
		return exit.Usagef("%v", err)
	}
	if format == render.Prometheus && c.Annotations[hasMetrics] == "" {
		return notMetrics(c.CommandPath())
	}
	if err := f.checkReadOnly(c); err != nil {
		return err
	}
	if f.Global.Timeout <= 0 {
		return exit.Usagef("--timeout %s: must be greater than zero", f.Global.Timeout)
	}
	if f.Global.Retries < 0 {
		return exit.Usagef("--retries %d: must not be negative", f.Global.Retries)
	}
	f.Printer = &render.Printer{
		Out: f.Out, Err: f.Err, Format: format, TTY: tty, Quiet: f.Global.Quiet,
		Color:  ios.ColorEnabled(f.Global.NoColor, format == render.Table),
		ErrTTY: ios.IsStderrTTY(),
	}
	if format == render.Table {
		f.Printer.Width = ios.TerminalWidth()
	}
	if err := f.noteCLIFlags(c); err != nil {
		return err
	}
	f.started = true
	return nil
}
