package cmd

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/render"
)

// change is what a confirmation is about: a statement of what the command
// would do ("delete 3 records matching ..."), the question to ask, and
// the keys it would touch (the first few of More+len(Keys)).
type change struct {
	What     string
	Question string
	Keys     []string
	More     int64
}

// listedKeys is how many keys a confirmation or a dry run names before
// "and N more".
const listedKeys = 20

// keyList gathers the first listedKeys keys of a selection and counts the
// rest.
type keyList struct {
	Keys []string
	More int64
}

func (l *keyList) add(key string) {
	if len(l.Keys) < listedKeys {
		l.Keys = append(l.Keys, render.Field(key))
		return
	}
	l.More++
}

// lines are the list's lines: the keys (sorted: SCAN's order is none),
// then "and N more".
func (l keyList) lines() []string {
	out := slices.Sorted(slices.Values(l.Keys))
	if l.More > 0 {
		out = append(out, "and "+render.Count(l.More)+" more")
	}
	return out
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
	var b strings.Builder
	b.WriteString(c.What)
	if len(c.Keys) > 0 {
		b.WriteString(":\n")
		for _, l := range (keyList{Keys: c.Keys, More: c.More}).lines() {
			b.WriteString("  " + l + "\n")
		}
	} else {
		b.WriteString("\n")
	}
	fmt.Fprintf(f.Err, "%s%s [y/N] ", b.String(), c.Question)
	answer, _ := bufio.NewReader(f.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("not confirmed: nothing changed")}
}
