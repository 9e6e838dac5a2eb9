package cmd

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/view"
)

// change is what a confirmation is about: what the command would do, the
// question, and the keys it would touch (the first of More+len(Keys)).
type change struct {
	What     string
	Question string
	Keys     []string
	More     int64
}

// confirm asks on a terminal; elsewhere the change needs --yes.
func confirm(f *Factory, yes bool, c change) error {
	if yes {
		return nil
	}
	if !f.IOStreams().CanPrompt() {
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s: confirmation needed", c.What),
			Hint: "pass --yes to confirm (or --dry-run to only see what would change)"}
	}
	head := c.What + "\n"
	if len(c.Keys) > 0 {
		head = c.What + ":\n"
		for _, l := range (view.KeyList{Keys: c.Keys, More: c.More}).Lines() {
			head += "  " + l + "\n"
		}
	}
	fmt.Fprintf(f.Err, "%s%s [y/N] ", head, c.Question)
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
