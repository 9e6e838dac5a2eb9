package cmd

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/view"
)

// confirm asks question about what the command would do, and the keys it
// would touch, on a terminal; elsewhere the change needs --yes.
func confirm(f *Factory, yes bool, what, question string, keys view.KeyList) error {
	if yes {
		return nil
	}
	if !f.IOStreams().CanPrompt() {
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s: confirmation needed", what),
			Hint: "pass --yes to confirm (or --dry-run to only see what would change)"}
	}
	head := what + "\n"
	if len(keys.Keys) > 0 {
		head = what + ":\n"
		for _, l := range keys.Lines() {
			head += "  " + l + "\n"
		}
	}
	fmt.Fprintf(f.Err, "%s%s [y/N] ", head, question)
	answer, err := bufio.NewReader(f.In).ReadString('\n')
	if err != nil {
		// End of input (Ctrl-D, a closed pipe): no newline was typed, so
		// end the prompt's line here; what follows starts its own.
		fmt.Fprintln(f.Err)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("not confirmed: nothing changed")}
}
