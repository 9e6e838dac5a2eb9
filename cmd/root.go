// Package cmd holds idmpctl's commands: flags, validation and wiring, each
// verb in files of its own (options, Validate, then a run that calls ops and
// prints). Redis work lives in internal/ops, the terminal facts in
// internal/iostreams, and output in internal/render. This file is the root
// command and the run.
package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/iostreams"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/spf13/cobra"
)

// NewRootCmd builds the whole command tree (help, completion scripts, man pages).
func NewRootCmd(f *Factory) *cobra.Command {
	return newRoot(f, "")
}

// newRoot builds the root with its global flags and the verb named, or every
// verb when verb is "": building the tree is a measurable part of a start.
func newRoot(f *Factory, verb string) *cobra.Command {
	root := &cobra.Command{
		Use:   "idmpctl",
		Short: "Operate Redis idempotency state: IDMP streams, idempotency keys, capacity",
		Long: `idmpctl operates Redis idempotency state: idempotent stream production
(XADD IDMP, native on Redis 8.6+, emulated with atomic Lua elsewhere),
idempotency keys claimed by workers, and the sizing of IDMP settings.

Connection: --url, or IDMPCTL_URL, or REDIS_URL
(default ` + redisconn.DefaultURL + `); password from the URL, IDMPCTL_PASSWORD or
REDISCLI_AUTH. redis-cli's -h HOST, -p PORT, -a PASSWORD and -n DB change
that URL's parts (so help is --help).`,
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
			// "idmpctl -h redis.internal": not a request for help, nor a success.
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
	// Flag usages wrap to the terminal's width, 80 columns when not one.
	width := cmp.Or(f.IOStreams().TerminalWidth(), 80)
	usage := strings.ReplaceAll(root.UsageTemplate(), "Flags.FlagUsages ", fmt.Sprintf("Flags.FlagUsagesWrapped %d ", width))
	root.SetUsageTemplate(usage + "\nExit codes: idmpctl help " + exitCodesTopic + "\n")
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
	// -h is the host, as in redis-cli: a --help of our own keeps cobra
	// from adding -h.
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

// Main runs idmpctl and returns its exit code.
func Main() int {
	ios := iostreams.System()
	f := &Factory{In: ios.In, Out: ios.Out, Err: ios.ErrOut, Getenv: os.Getenv, Now: time.Now,
		IsTTY: iostreams.IsTerminal, TermWidth: iostreams.TerminalWidth, io: ios}
	if isClaimRun(os.Args[1:]) {
		f.guard = claimrun.StartGuard(f.Err)
	}
	if fewRoundTrips(os.Args[1:]) && os.Getenv("GOMAXPROCS") == "" {
		// A command of a few round trips gains nothing from the Go
		// runtime's threads on other cores, and they cost a server on the
		// same machine: measured on a 2-CPU machine, a single xadd's server
		// CPU went from 1.74x to 1.42x redis-cli's (docs/speed.md).
		runtime.GOMAXPROCS(1)
	}
	return run(f, os.Args[1:])
}

func run(f *Factory, args []string) int {
	defer f.close()
	verb := verbOf(args)
	root := newRoot(f, verb)
	root.SetArgs(args)
	var typo error
	refuseTyposWithHelp(root, &typo)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		err = typo
	}
	ios := f.IOStreams()
	if lost := ios.OutputLost(); lost != nil && !f.outputTold &&
		(err == nil || exit.Code(err) == exit.Done || ios.IsOutputError(err)) {
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
	printError(f, verb, err)
	return exit.Code(err)
}
