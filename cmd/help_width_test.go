package cmd

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// TestHelpFits80 walks the command tree: no line of any command's --help
// is wider than 80 columns when stdout is not a terminal.
func TestHelpFits80(t *testing.T) {
	f := testFactory("")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out := f.Out.(*bytes.Buffer)
		out.Reset()
		if err := c.Help(); err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("%s --help: %d columns: %s", c.CommandPath(), n, l)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(f))
}
