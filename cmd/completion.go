package cmd

import (
	"slices"

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
		Args: cobra.MatchAll(exactArgs(1), func(c *cobra.Command, args []string) error {
			if !slices.Contains(c.ValidArgs, args[0]) {
				return exit.Usagef("completion %q: want bash, zsh, fish or powershell", args[0])
			}
			return nil
		}),
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
