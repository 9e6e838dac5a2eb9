package cmd

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// NewCmdCompletion writes a shell completion script.
func NewCmdCompletion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script. For bash: source <(idmpctl completion bash),
or save it as /etc/bash_completion.d/idmpctl. It needs nothing else: with
the bash-completion package it uses its functions, without it its own.

Completed: commands and flags; the values of -o, --status and --mode;
and key names (inspect KEY, the claim verbs' KEY, xadd and cfgset's
STREAM, purge --stream) from the server --url names, by one bounded SCAN
(at most 1,000 keys looked at, within a second; nothing on a cluster,
whose scan would have to ask every primary).`,
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
			switch args[0] { // one of ValidArgs (Args)
			case "zsh":
				return root.GenZshCompletion(f.Out)
			case "fish":
				return root.GenFishCompletion(f.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(f.Out)
			}
			return bashCompletion(root, f.Out)
		},
	}
}

// cobraWordsByRef is the line of cobra's V2 bash script that needs the
// bash-completion package ("_get_comp_words_by_ref: command not found").
const cobraWordsByRef = "    _get_comp_words_by_ref \"$@\" cur prev words cword\n"

// ownWordsByRef does _get_comp_words_by_ref -n =:'s work without the
// bash-completion package.
const ownWordsByRef = `    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref "$@" cur prev words cword
        return
    fi
    # No bash-completion package: the words as it gives them (-n =:),
    # COMP_WORDS with the parts bash split at = and : joined again.
    local i w line=$COMP_LINE rest
    words=()
    cword=0
    for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
        w=${COMP_WORDS[i]}
        rest=${line#"${line%%[![:space:]]*}"}
        if ((i > 0 && ${#rest} == ${#line})) && [[ $w == [=:]* || ${words[${#words[@]}-1]} == *[=:] ]]; then
            words[${#words[@]}-1]+=$w
        else
            words+=("$w")
        fi
        line=${rest#"$w"}
        ((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
    done
    cur=${words[cword]}
    prev=${words[cword-1]}
`

// bashCompletion is cobra's V2 bash script, working without bash-completion.
func bashCompletion(root *cobra.Command, w io.Writer) error {
	var b bytes.Buffer
	if err := root.GenBashCompletionV2(&b, true); err != nil {
		return err
	}
	s := b.String()
	if strings.Count(s, cobraWordsByRef) != 1 {
		return exit.New(exit.Internal, "completion bash", "%v", errors.New("cobra's script changed: its _get_comp_words_by_ref line is not where it was"))
	}
	_, err := io.WriteString(w, strings.Replace(s, cobraWordsByRef, ownWordsByRef, 1))
	return err
}
