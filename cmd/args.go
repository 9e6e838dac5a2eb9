package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/spf13/cobra"
)

// inputError is an input file that cannot be read: 66 (sysexits' EX_NOINPUT).
func inputError(flag string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return exit.New(exit.NotFound, flag+" "+strconv.Quote(pe.Path), "%s", pe.Err)
	}
	return exit.New(exit.NotFound, flag, "%v", err)
}

// readArg reads STRING, @FILE, or - (stdin) for flags that take either.
func readArg(in io.Reader, flag, v string, allowStdin bool) (string, error) {
	switch {
	case allowStdin && v == "-":
		b, err := io.ReadAll(in)
		if err != nil {
			return "", exit.New(exit.Usage, "--"+flag, "read stdin: %v", err)
		}
		return string(b), nil
	case len(v) > 1 && v[0] == '@':
		b, err := os.ReadFile(v[1:])
		if err != nil {
			return "", inputError("--"+flag, err)
		}
		return string(b), nil
	}
	return v, nil
}

// usageErr is err as a usage error (64).
func usageErr(err error) error { return &exit.Error{Code: exit.Usage, Err: err} }

// noArgs, exactArgs and minArgs are cobra's validators with usage exit
// codes, naming the command without "idmpctl" (the error line's start).
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return exit.Usagef("%s takes no arguments, got %q", verbPath(c), args[0])
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return exit.Usagef("%s needs %s, got %d", verbPath(c), render.N(int64(n), "argument"), len(args))
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < n {
			return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s needs %s", verbPath(c), what),
				Hint: "see '" + c.CommandPath() + " --help'"}
		}
		return nil
	}
}

// verbPath is the command's path without the program's name.
func verbPath(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// runValidated ends a verb's RunE once its arguments are read: checks (pure
// validation, and the I/O it needs), then runF (tests capture the options)
// or run.
func runValidated[O any](c *cobra.Command, o O, runF func(O) error, run func(context.Context, O) error, checks ...func() error) error {
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	if runF != nil {
		return runF(o)
	}
	return run(c.Context(), o)
}

// quoteJoin is names quoted ("a", "b"), joined by sep.
func quoteJoin(names []string, sep string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, sep)
}
