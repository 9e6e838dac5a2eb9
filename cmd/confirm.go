package cmd

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
)

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
