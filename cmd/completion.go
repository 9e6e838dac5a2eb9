package cmd

import (
	"fmt"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// NewCmdCompletion writes a shell completion script.
func NewCmdCompletion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:         "completion bash|zsh|fish|powershell",
		Short:       "Print a shell completion script",
		Long:        "Print a shell completion script. For bash: source <(idmpctl completion bash)",
		ValidArgs:   []string{"bash", "zsh", "fish", "powershell"},
		Annotations: map[string]string{writesAnnotation: writesNever},
		Args:        cobra.MatchAll(exactArgs(1), cobra.OnlyValidArgs),
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(f.Out, true)
			case "zsh":
				return root.GenZshCompletion(f.Out)
			case "fish":
				return root.GenFishCompletion(f.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(f.Out)
			}
			return exit.Usagef("unknown shell %q", args[0])
		},
	}
}

// noArgs and exactArgs are cobra's validators with usage exit codes.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return exit.Usagef("%s takes no arguments, got %q", c.CommandPath(), args[0])
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return exit.Usagef("%s needs %d argument(s), got %d", c.CommandPath(), n, len(args))
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < n {
			return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s needs %s", c.CommandPath(), what),
				Hint: "see '" + c.CommandPath() + " --help'"}
		}
		return nil
	}
}
