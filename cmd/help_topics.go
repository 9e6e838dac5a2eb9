package cmd

import (
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// exitCodesTopic is "idmpctl help exit-codes", a cobra help topic rather
// than a table under every command's --help.
const exitCodesTopic = "exit-codes"

func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   exitCodesTopic,
		Short: "The exit codes: a contract scripts can rely on",
		Long: `idmpctl's exit codes are a contract: a script may branch on them.

` + exit.Table + `

claim run passes the command's own exit code through when it ran; the
codes above then mean that it did not run (or lost its claim), which JSON
output and stderr also say. 69 and 75 always mean that the command did not
run: once it ran, claim run never exits with them.

Output that cannot be written (stdout on a full disk) is never a silent
success: the command exits 70 and says so on stderr.

What to do on each code, case by case: docs/exit-codes.md in the
repository; idmpctl(1) (man idmpctl) has this table too.`,
	}
}

// completeHelp completes "idmpctl help ...", help topics included, which
// cobra's own completion leaves out.
func completeHelp(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	target := c.Root()
	for _, a := range args {
		if target = findVerb(target, a); target == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
	}
	var out []string
	for _, s := range target.Commands() {
		if (s.IsAvailableCommand() || s.IsAdditionalHelpTopicCommand()) && strings.HasPrefix(s.Name(), toComplete) {
			out = append(out, s.Name()+"\t"+s.Short)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
