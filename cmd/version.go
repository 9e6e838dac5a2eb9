package cmd

import (
	"runtime"
	"runtime/debug"

	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// version is stamped at release: -ldflags "-X github.com/idmpctl/idmpctl/cmd.version=1.2.3".
var version = ""

// printVersion is idmpctl version's output (and idmpctl --version's): the
// stamped version, else the module's build info.
func printVersion(p *render.Printer) error {
	v, commit := version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = s.Value[:12]
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return p.Show(view.Version{Version: v, Commit: commit, Go: runtime.Version()})
}

// NewCmdVersion prints the version.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:         "version",
		Short:       "Print idmpctl's version",
		Args:        noArgs,
		Annotations: map[string]string{writesAnnotation: writesNever},
		RunE: func(c *cobra.Command, _ []string) error {
			return printVersion(f.Printer)
		},
	}
}
