// Package cmd holds idmpctl's commands: flags, validation, wiring and views.
// Redis logic lives in internal/ops/redisconn, stream, claim and keyspace,
// claim run's process supervision in internal/ops/claimrun, and output in
// internal/render.
package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Factory carries what every command depends on: the I/O streams, the
// environment, the printer and a lazily opened connection.
type Factory struct {
	In       io.Reader
	Out, Err io.Writer
	Getenv   func(string) string
	IsTTY    func(f any) bool
	// TermWidth is the width in columns of the terminal f is (0: none).
	TermWidth func(f any) int
	Now       func() time.Time

	Printer *render.Printer
	Global  GlobalOptions

	conn   *redisconn.Conn
	stdout *outWriter // Out as Main made it: its first write error
	// outputTold: the command dealt with its own lost output (claim run,
	// whose command's exit code stands), or already failed for it.
	outputTold bool
	started    bool            // flags parsed: errors from here on are not usage errors
	guard      *claimrun.Guard // claim run's guard, started before the tree is built (Linux)
	// caught is the signal (SIGINT, SIGTERM) that stopped a command run
	// under untilInterrupted: it exits 128 + its number.
	caught atomic.Value
	// opened is conn for the goroutine that closes it on a signal.
	opened atomic.Pointer[redisconn.Conn]
}

// GlobalOptions are the persistent flags.
type GlobalOptions struct {
	URL         string
	TLSCA       string
	TLSCert     string
	TLSKey      string
	TLSInsecure bool
	Timeout     time.Duration
	Retries     int
	Cluster     bool
	Output      string
	NoColor     bool
	ReadOnly    bool
	// redis-cli's -h, -p, -a and -n: they change the URL's host, port,
	// password and database (cliURL).
	Quiet    bool // -q: no warnings on stderr (errors still print)
	Host     string
	Port     int
	Pass     string
	DB       int
	cliFlags map[string]bool // which of them were given
}

// Conn opens the connection on first use; commands that need no server
// never call it.
func (f *Factory) Conn(ctx context.Context) (*redisconn.Conn, error) {
	if f.conn != nil {
		return f.conn, nil
	}
	cfg := redisconn.ConnConfig{
		URL: f.Global.URL, URLFromFlag: f.Global.URL != "",
		TLSCA: f.Global.TLSCA, TLSCert: f.Global.TLSCert, TLSKey: f.Global.TLSKey,
		TLSInsecure: f.Global.TLSInsecure, Timeout: f.Global.Timeout, Cluster: f.Global.Cluster,
	}
	if cfg.URL == "" {
		cfg.URL = firstNonEmpty(f.Getenv("IDMPCTL_URL"), f.Getenv("REDIS_URL"), redisconn.DefaultURL)
	}
	if len(f.Global.cliFlags) > 0 {
		u, err := cliURL(cfg.URL, f.Global)
		if err != nil {
			return nil, err
		}
		cfg.URL = u
	}
	cfg.Password = firstNonEmpty(f.Getenv("IDMPCTL_PASSWORD"), f.Getenv("REDISCLI_AUTH"))
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

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func (f *Factory) close() {
	if f.conn != nil {
		f.conn.Close()
	}
	f.guard.Release() // one started for a claim run that never ran a command
}

// passwordSource names where the password idmpctl sent came from, as
// Conn chose it: -a, else the URL, else IDMPCTL_PASSWORD, else
// REDISCLI_AUTH.
func (f *Factory) passwordSource() string {
	if f.Global.cliFlags["pass"] {
		return "-a"
	}
	raw := f.Global.URL
	if raw == "" {
		raw = firstNonEmpty(f.Getenv("IDMPCTL_URL"), f.Getenv("REDIS_URL"))
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return "the URL"
		}
	}
	if f.Getenv("IDMPCTL_PASSWORD") != "" {
		return "IDMPCTL_PASSWORD"
	}
	if f.Getenv("REDISCLI_AUTH") != "" {
		return "REDISCLI_AUTH"
	}
	return "" // none: the URL's user was tried with an empty password
}

// NewRootCmd builds the whole command tree (help, completion scripts, man
// pages).
func NewRootCmd(f *Factory) *cobra.Command {
	return newRoot(f, "")
}

// newRoot builds the root with its global flags and the verb named, or every
// verb when verb is "". Building the tree is a measurable part of a start
// that scripts pay per message, so a run builds only the verb it runs.
func newRoot(f *Factory, verb string) *cobra.Command {
	root := &cobra.Command{
		Use:   "idmpctl",
		Short: "Operate Redis idempotency state: IDMP streams, idempotency keys, capacity",
		Long: `idmpctl operates Redis idempotency state: idempotent stream production
(XADD IDMP, native on Redis 8.6+, emulated with atomic Lua elsewhere),
idempotency keys claimed by workers, and the sizing of IDMP settings.

Connection: --url, or IDMPCTL_URL, or REDIS_URL (default ` + redisconn.DefaultURL + `);
password from the URL, IDMPCTL_PASSWORD or REDISCLI_AUTH. redis-cli's -h HOST,
-p PORT, -a PASSWORD and -n DB change that URL's parts (so help is --help).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			return f.setup(c)
		},
	}
	var showVersion bool
	root.Flags().BoolVar(&showVersion, "version", false, "print idmpctl's version (as idmpctl version does)")
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(c *cobra.Command, args []string) error {
		switch {
		case showVersion:
			return printVersion(f.Printer)
		case len(args) > 0:
			return unknownVerb(c, args[0])
		case len(f.Global.cliFlags) > 0:
			// "idmpctl -h redis.internal": a redis-cli habit, not a request
			// for help; a script must not read success in it.
			return &exit.Error{Code: exit.Usage, Err: errors.New("no command given"),
				Hint: "-h is the server's host, as in redis-cli; --help shows help, e.g. idmpctl -h HOST inspect --server"}
		}
		return c.Help()
	}
	root.SetIn(f.In)
	root.SetOut(f.Out)
	root.SetErr(f.Err)
	root.SetFlagErrorFunc(flagError)
	// The exit codes are a help topic of their own, not under every --help.
	root.SetUsageTemplate(root.UsageTemplate() + "\nExit codes: idmpctl help " + exitCodesTopic + "\n")
	root.CompletionOptions.DisableDefaultCmd = true

	pf := root.PersistentFlags()
	g := &f.Global
	pf.StringVar(&g.URL, "url", "", "server URL: redis://[user@]host:port/db, rediss://..., unix:///path (env IDMPCTL_URL, REDIS_URL)")
	pf.StringVar(&g.TLSCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate")
	pf.StringVar(&g.TLSCert, "tls-cert", "", "PEM client certificate (with --tls-key)")
	pf.StringVar(&g.TLSKey, "tls-key", "", "PEM client key (with --tls-cert)")
	pf.BoolVar(&g.TLSInsecure, "tls-insecure", false, "do not verify the server's certificate")
	durationVar(pf, &g.Timeout, "timeout", 5*time.Second, "bound on a single call to Redis, retries included; on each round trip of long work")
	pf.IntVar(&g.Retries, "retries", 3, "retries of idempotent operations after a network error")
	pf.BoolVar(&g.Cluster, "cluster", false, "use the Redis Cluster protocol (detected when not given)")
	pf.StringVarP(&g.Output, "output", "o", "", "output: table, json, raw, or prometheus for inspect (default table on a terminal, raw otherwise)")
	allowEmpty(pf, "output") // -o "": the default format
	pf.BoolVar(&g.NoColor, "no-color", false, "no colour (also NO_COLOR)")
	pf.BoolVar(&g.ReadOnly, "read-only", false, "refuse every command that could write, before it connects (also IDMPCTL_READ_ONLY=1)")
	// redis-cli's habits: -h is the host, so help is --help alone (a
	// persistent flag of its own, which keeps cobra from adding -h).
	pf.StringVarP(&g.Host, "host", "h", "", "server host, as redis-cli's -h (replaces the URL's host)")
	pf.IntVarP(&g.Port, "port", "p", 0, "server port, as redis-cli's -p (replaces the URL's port)")
	pf.StringVarP(&g.Pass, "pass", "a", "", "password, as redis-cli's -a (visible in ps: prefer REDISCLI_AUTH)")
	pf.IntVarP(&g.DB, "db", "n", 0, "database number, as redis-cli's -n (replaces the URL's)")
	pf.Bool("help", false, "help for the command (-h is the host, as in redis-cli)")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "print no warnings on stderr (errors still print)")

	for _, v := range verbs {
		if verb == "" || v.name == verb {
			if c := v.build(f); c != nil {
				root.AddCommand(c)
			}
		}
	}
	refuseUnknownVerbs(root)
	if verb == "" { // the whole tree: help, or a completion request (__complete)
		registerCompletions(root, f)
	}
	root.SetHelpCommand(newHelpCmd())
	root.AddCommand(newExitCodesTopic())
	return root
}

// newHelpCmd is "idmpctl help [VERB...]": cobra's own prints the group's
// help and exits 0 for "help claim aquire", and "Unknown help topic" with
// 0 for "help nosuch"; a typo is a usage error here as everywhere (64).
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		// The verbs and the help topics (exit-codes).
		ValidArgsFunction: completeHelp,
		RunE: func(c *cobra.Command, args []string) error {
			target := c.Root()
			for _, a := range args {
				next := findVerb(target, a)
				if next == nil {
					return unknownVerb(target, a)
				}
				target = next
			}
			return target.Help()
		},
	}
}

// findVerb is c's sub-command called name (or one of its aliases).
func findVerb(c *cobra.Command, name string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}

// refuseUnknownVerbs makes every command that groups verbs (the root,
// claim) refuse an argument that names none of them: a usage error (64)
// with suggestions on stderr, nothing on stdout. Cobra would print the
// group's help and exit 0 for "claim aquire", and a script capturing the
// output (TOKEN=$(idmpctl claim aquire k)) would go on with help text.
func refuseUnknownVerbs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownVerbs(sub)
	}
	if !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return // the root has its own RunE (--version), which refuses too
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return unknownVerb(c, args[0])
	}
}

// unknownVerb is the usage error for name, which is none of c's verbs:
// the verbs it may have meant (cobra's suggestions, and a verb it starts
// with, as "run-it" starts with "run"), else all of them.
func unknownVerb(c *cobra.Command, name string) error {
	var meant, all []string
	for _, s := range c.Commands() {
		if !s.IsAvailableCommand() {
			continue
		}
		all = append(all, s.Name())
		if len(s.Name()) >= 3 && strings.HasPrefix(name, s.Name()) {
			meant = append(meant, s.Name())
		}
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, set where it suggests itself
	}
	for _, s := range c.SuggestionsFor(name) {
		if !slices.Contains(meant, s) {
			meant = append(meant, s)
		}
	}
	hint := "did you mean one of " + strings.Join(all, ", ") + "?"
	if len(meant) > 0 {
		q := make([]string, len(meant))
		for i, m := range meant {
			q[i] = strconv.Quote(m)
		}
		hint = "did you mean " + strings.Join(q, " or ") + "?"
	}
	return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("unknown command %q for %q", name, c.CommandPath()),
		Hint: hint + " see '" + c.CommandPath() + " --help'"}
}

// verbs are the top-level commands, in one list: newRoot builds only the
// one a run needs. A build may return nil where its verb does not exist
// (the guard, on platforms without one).
var verbs = []struct {
	name  string
	build func(*Factory) *cobra.Command
}{
	{"xadd", func(f *Factory) *cobra.Command { return NewCmdXAdd(f, nil) }},
	{"cfgset", func(f *Factory) *cobra.Command { return NewCmdCfgSet(f, nil) }},
	{"inspect", func(f *Factory) *cobra.Command { return NewCmdInspect(f, nil) }},
	{"claim", NewCmdClaim},
	{"purge", func(f *Factory) *cobra.Command { return NewCmdPurge(f, nil) }},
	{"restore", func(f *Factory) *cobra.Command { return NewCmdRestore(f, nil) }},
	{"migrate", func(f *Factory) *cobra.Command { return NewCmdMigrate(f, nil) }},
	{"exec", func(f *Factory) *cobra.Command { return NewCmdExec(f, nil) }},
	{"calc-maxsize", func(f *Factory) *cobra.Command { return NewCmdCalcMaxsize(f, nil) }},
	{"calc-ttl", func(f *Factory) *cobra.Command { return NewCmdCalcTTL(f, nil) }},
	{"version", NewCmdVersion},
	{"completion", NewCmdCompletion},
	{claimrun.GuardCommand, newCmdGuard},
}

// verbOf is the verb args run: the first argument that is neither a global
// flag nor its value. It is "" (the whole tree) when there is none or it is
// not a verb, so help, completion requests and "unknown command" with its
// suggestions see every verb.
func verbOf(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "--"):
			if valueFlags[a] {
				i++ // "--url URL"; "--url=URL" carries its value
			}
		case strings.HasPrefix(a, "-") && a != "-":
			if valueShorthands[a] {
				i++ // "-o json"; "-ojson" carries its value
			}
		case a == "completion": // its scripts describe the whole tree
			return ""
		default:
			for _, v := range verbs {
				if v.name == a {
					return a
				}
			}
			return ""
		}
	}
	return ""
}

// valueFlags are the global flags that take a value, and valueShorthands
// their one-letter forms.
var (
	valueFlags = map[string]bool{
		"--url": true, "--tls-ca": true, "--tls-cert": true, "--tls-key": true,
		"--timeout": true, "--retries": true, "--output": true,
		"--host": true, "--port": true, "--pass": true, "--db": true,
	}
	valueShorthands = map[string]bool{"-o": true, "-h": true, "-p": true, "-a": true, "-n": true}
)

// hasMetrics is the annotation of the commands that print -o prometheus.
const hasMetrics = "idmpctl/metrics"

// setup runs once flags are parsed for command c: the output and colour
// decisions.
func (f *Factory) setup(c *cobra.Command) error {
	// --url "$UNSET" would reach IDMPCTL_URL's server, or localhost's;
	// purge --pid "$UNSET" would forget every producer's iids.
	if err := refuseEmpty(c); err != nil {
		return err
	}
	tty := f.IsTTY(f.Out) || f.Getenv("IDMPCTL_FORCE_TTY") != ""
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
	color := tty
	if v := f.Getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		color = true
	}
	if f.Getenv("NO_COLOR") != "" || f.Global.NoColor {
		color = false
	}
	if format != render.Table {
		// Raw and JSON are read by programs: a forced colour (CLICOLOR_FORCE
		// set for other tools, -o raw on a terminal) must not put escape
		// codes into their fields.
		color = false
	}
	f.Printer = &render.Printer{
		Out: f.Out, Err: f.Err, Format: format, TTY: tty, Color: color, Quiet: f.Global.Quiet,
		ErrTTY: f.IsTTY(f.Err) || f.Getenv("IDMPCTL_FORCE_TTY") != "",
	}
	if format == render.Table {
		f.Printer.Width = f.width()
	}
	if err := f.noteCLIFlags(c); err != nil {
		return err
	}
	f.started = true
	return nil
}

// writesAnnotation says when a command writes to Redis, for --read-only:
// writesNever, writesUnlessDryRun (its --dry-run writes nothing), or
// writesWithApply (only with --apply, and not with --dry-run). A command
// without it is taken to write: a new command is refused under --read-only
// until it says otherwise.
const (
	writesAnnotation   = "idmpctl/writes"
	writesNever        = "never"
	writesUnlessDryRun = "unless-dry-run"
	writesWithApply    = "with-apply"
	// writesPerCommand: exec, which judges each command it is given (the
	// server's COMMAND INFO), refusing those that could write.
	writesPerCommand = "per-command"
)

// mayWrite reports whether c, with the flags given, could write to Redis.
// Cobra's own commands (help, the hidden completion requests) and idmpctl's
// hidden helpers never do.
func mayWrite(c *cobra.Command) bool {
	if c.Hidden || c.Name() == "help" || !c.Runnable() {
		return false
	}
	dryRun := func() bool {
		v, err := c.Flags().GetBool("dry-run")
		return err == nil && v
	}
	switch c.Annotations[writesAnnotation] {
	case writesNever, writesPerCommand:
		return false
	case writesUnlessDryRun:
		return !dryRun()
	case writesWithApply:
		v, err := c.Flags().GetString("apply")
		return err == nil && v != "" && !dryRun()
	}
	return true
}

// readOnly is --read-only, else IDMPCTL_READ_ONLY: on for any value but
// "", 0, false and no (a typo keeps it on).
func (f *Factory) readOnly(c *cobra.Command) bool {
	if fl := c.Flags().Lookup("read-only"); fl != nil && fl.Changed {
		return f.Global.ReadOnly
	}
	switch strings.ToLower(strings.TrimSpace(f.Getenv("IDMPCTL_READ_ONLY"))) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

// checkReadOnly refuses (64) a command that could write under --read-only,
// before anything connects.
func (f *Factory) checkReadOnly(c *cobra.Command) error {
	if !f.readOnly(c) || !mayWrite(c) {
		return nil
	}
	hint := "drop --read-only (and IDMPCTL_READ_ONLY) to write"
	if c.Annotations[writesAnnotation] == writesUnlessDryRun || c.Annotations[writesAnnotation] == writesWithApply {
		hint = "--dry-run shows what it would do without writing; " + hint
	}
	return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s could write to Redis: refused in read-only mode (--read-only or IDMPCTL_READ_ONLY)", c.CommandPath()), Hint: hint}
}

// width is the terminal's width in columns, for tables and views: the real
// terminal's; for a terminal forced with IDMPCTL_FORCE_TTY, COLUMNS or 80;
// 0 (no limit) when stdout is no terminal.
func (f *Factory) width() int {
	if f.TermWidth != nil {
		if n := f.TermWidth(f.Out); n > 0 {
			return n
		}
	}
	if f.Getenv("IDMPCTL_FORCE_TTY") == "" {
		return 0
	}
	if n, err := strconv.Atoi(f.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// Main runs idmpctl and returns its exit code.
func Main() int {
	stdout := &outWriter{w: os.Stdout}
	f := &Factory{
		In: os.Stdin, Out: stdout, Err: os.Stderr, Getenv: os.Getenv, Now: time.Now, stdout: stdout,
		IsTTY: func(w any) bool {
			if file, ok := file(w); ok {
				return isatty.IsTerminal(file.Fd())
			}
			return false
		},
		TermWidth: func(w any) int {
			if file, ok := file(w); ok {
				if cols, _, err := term.GetSize(int(file.Fd())); err == nil {
					return cols
				}
			}
			return 0
		},
	}
	if isClaimRun(os.Args[1:]) {
		f.guard = claimrun.StartGuard(f.Err)
	}
	return run(f, os.Args[1:])
}

// isClaimRun says whether args run "claim run", for starting its guard early
// (wrong guesses cost a guard let go at exit).
func isClaimRun(args []string) bool {
	if verbOf(args) != "claim" {
		return false
	}
	seen := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return false
		case valueFlags[a] || valueShorthands[a]:
			i++ // its value
		case a == "claim" && !seen:
			seen = true
		case seen && !strings.HasPrefix(a, "-"):
			return a == "run"
		}
	}
	return false
}

func run(f *Factory, args []string) int {
	defer f.close()
	root := newRoot(f, verbOf(args))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if lost := f.outputLost(); lost != nil && !f.outputTold &&
		(err == nil || exit.Code(err) == exit.Done || errors.Is(err, f.stdout.err)) {
		err = lost // a success, or "done", whose output nobody got; or the write's own error
	}
	if err == nil {
		return exit.OK
	}
	var e *exit.Error
	if !f.started && !errors.As(err, &e) {
		err = &exit.Error{Code: exit.Usage, Err: err, Hint: "see 'idmpctl --help'"}
	}
	if sig, ok := f.caught.Load().(syscall.Signal); ok {
		err = interruptedBy(err, sig)
	}
	printError(f, err)
	return exit.Code(err)
}

// callBound bounds a command that is one call to Redis (a single xadd, a
// claim step, cfgset's read and its write, inspect KEY, inspect --server):
// the whole call, connecting and retries included, takes at most
// --timeout, plus wait (what --wait-replicas may wait). A frozen server
// costs one --timeout, not one per attempt. Long work (xadd --batch,
// scans, purges, --watch, claim run) bounds each round trip instead.
func (f *Factory) callBound(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.Global.Timeout+wait)
}

// untilInterrupted is ctx cancelled by SIGINT or SIGTERM, for the commands
// that loop (batches, scans, watches): they stop cleanly and say what they
// did, and a command that stops with an error for it exits 128 + the
// signal's number (130, 143), as a shell reports a process the signal
// ended. A command of one round trip keeps the default action of those
// signals, and its start does without the signal machinery.
func untilInterrupted(f *Factory, ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	note := func(s os.Signal) {
		if sig, ok := s.(syscall.Signal); ok {
			f.caught.CompareAndSwap(nil, sig)
		}
	}
	go func() {
		select {
		case s := <-ch:
			note(s)
			cancel()
			// A reply being read does not end with the context: closing
			// the connection ends it now rather than at --timeout.
			if c := f.opened.Load(); c != nil {
				_ = c.Close()
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		select {
		case s := <-ch: // arrived as the command ended
			note(s)
		default:
		}
		cancel()
	}
}

// interruptedBy is err as the exit of a command stopped by sig: the code
// 128 + sig, what it was doing and its hint (a batch says how far it got);
// the network errors the cancellation caused say nothing.
func interruptedBy(err error, sig syscall.Signal) error {
	var e *exit.Error
	if errors.As(err, &e) && e.Silent {
		return err
	}
	out := &exit.Error{Code: 128 + int(sig), Err: fmt.Errorf("interrupted (%s)", signalName(sig))}
	if e != nil {
		out.What = e.What
		if e.Code == exit.Interrupted {
			out.Hint = e.Hint // what the command says of its stop (a batch: how far it got)
		}
	}
	return out
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// inOurWords is a network failure's message in our words, after what the
// command said it was doing, and its hint: the precise one alone, or in
// place of the generic one after what the command adds (a specific hint
// stays).
func inOurWords(e *exit.Error, hint, words, precise string) (string, string) {
	msg := words
	if e != nil && e.What != "" {
		msg = e.What + ": " + words
	}
	if hint == "" {
		return msg, precise
	}
	return msg, strings.Replace(hint, exit.UnreachableHint, precise, 1)
}

// answered finds the first bytes a reply that is not RESP held, quoted, in
// go-redis's error ("invalid reply: %q", "can't parse %q", "can't parse
// reply=%q reading string") or our reader's ("line %q not ended by CRLF",
// "unexpected %q").
var answered = regexp.MustCompile(`(?:reply: |reply=|parse |line |unexpected )("(?:[^"\\]|\\.)*")`)

func printError(f *Factory, err error) {
	var e *exit.Error
	if errors.As(err, &e) && e.Silent {
		return
	}
	msg := err.Error()
	hint := ""
	if e != nil {
		hint = e.Hint
	}
	switch {
	case errors.Is(err, context.Canceled):
		msg = "interrupted"
	case exit.Code(err) == exit.Permission && strings.Contains(msg, "WRONGPASS"):
		if src := f.passwordSource(); src != "" {
			hint = "the password from " + src + " was refused: check it, and the ACL user in the URL (redis://user@host)"
		} else {
			hint = "the URL names an ACL user but no password was given: put it in IDMPCTL_PASSWORD or REDISCLI_AUTH (idmpctl logs in as that user, never as the default user instead)"
		}
	case exit.Code(err) == exit.Unavailable && exit.ClosedByServer(err):
		// Go's "EOF" or "connection reset by peer" say less than this.
		msg, hint = inOurWords(e, hint, "the server closed the connection",
			"the server restarted, was stopped, or dropped this client (CLIENT KILL, its timeout setting, maxclients): run the command again once it answers")
	case exit.NotRESP(err):
		// go-redis's `redis: invalid reply: "<!DOCTYPE HTML>\n"` in our words.
		msg = "not a Redis server"
		if f.conn != nil {
			msg = f.conn.Display + " is not a Redis server"
		}
		if m := answered.FindStringSubmatch(err.Error()); m != nil {
			msg += ": it answered " + m[1]
		}
		if e != nil && e.What != "" && !e.Root {
			msg = e.What + ": " + msg
		}
		hint = exit.NotRedisHint
	case exit.Code(err) == exit.Unavailable && exit.TimedOut(err):
		// The network's words ("read tcp ...: i/o timeout") say less than
		// ours, and name no flag.
		msg, hint = inOurWords(e, hint, "no reply within --timeout "+render.Duration(f.Global.Timeout),
			"the server did not answer in time: it is down, overloaded, blocked by a slow command, or unreachable; --timeout D waits longer")
	}
	bad := func(s string) string { return s }
	if f.Printer != nil {
		bad = f.Printer.Bad
	}
	fmt.Fprintf(f.Err, "%s %s\n", bad("idmpctl:"), strings.TrimSpace(msg))
	if hint != "" {
		fmt.Fprintf(f.Err, "hint: %s\n", hint)
	}
}
