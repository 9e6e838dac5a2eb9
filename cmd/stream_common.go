package cmd

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/spf13/cobra"
)

// addModeFlag adds --mode auto|native|emulated.
func addModeFlag(c *cobra.Command, mode *string) {
	c.Flags().StringVar(mode, "mode", "auto", "IDMP mode: auto (native when the server has it), native or emulated")
}

// openStreams connects and resolves the IDMP mode (checked before connecting).
func openStreams(ctx context.Context, f *Factory, mode string) (*stream.Streams, error) {
	m, err := stream.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	conn, err := f.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return stream.Open(ctx, conn, m)
}
