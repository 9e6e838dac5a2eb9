package cmd

import (
	"context"
	"fmt"

	"github.com/idmpctl/idmpctl/internal/exit"

	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/spf13/cobra"
)

// addModeFlag adds --mode auto|native|emulated.
func addModeFlag(c *cobra.Command, mode *string) {
	c.Flags().StringVar(mode, "mode", "auto", "IDMP mode: auto (native when the server has it), native or emulated")
}

// refuseEmpty refuses a flag given with an empty value (64): an unset shell
// variable (--pid "$PID") must never pass for "not given", which would widen
// a selection to everything, or drop a guard.
func refuseEmpty(c *cobra.Command, names ...string) error {
	for _, n := range names {
		if f := c.Flags().Lookup(n); f != nil && f.Changed && f.Value.String() == "" {
			return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--%s: empty value", n),
				Hint: "an empty value selects nothing (an unset shell variable?): give a value, or leave the flag out; nothing was changed"}
		}
	}
	return nil
}

// openStreams connects and resolves the IDMP mode.
func openStreams(ctx context.Context, f *Factory, mode string) (*stream.Streams, error) {
	m, err := stream.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	conn, err := f.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return stream.NewStreams(conn, m)
}
