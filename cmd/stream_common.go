package cmd

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/spf13/cobra"
)

// addModeFlag adds --mode auto|native|emulated.
func addModeFlag(c *cobra.Command, mode *string) {
	c.Flags().StringVar(mode, "mode", "auto", "IDMP mode: auto (native when the server has it), native or emulated")
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

// confirm asks on a terminal; elsewhere the change needs --yes.
func confirm(f *Factory, yes bool, question, flagHint string) error {
	if yes {
		return nil
	}
	interactive := f.IsTTY(f.In) || f.Getenv("IDMPCTL_FORCE_TTY") != ""
	if !interactive {
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s: confirmation needed", question),
			Hint: "pass --yes to confirm (or --dry-run to only see what would change)" + flagHint}
	}
	fmt.Fprintf(f.Err, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(f.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("not confirmed: nothing changed")}
}
