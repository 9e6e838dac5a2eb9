package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/spf13/cobra"
)

// statusMeaning says what each selectable status selects, for --help.
var statusMeaning = map[records.Status]string{
	records.Processing: "claimed, the work under way",
	records.Locked:     "lock keys (X:lock, lock:X), not records",
	records.Completed:  "the work was done",
	records.Failed:     "the last attempt failed",
	records.Expired:    "past the record's own expiry (Powertools)",
	records.Unknown:    "a status none of these words names",
}

// statusHelp lists every value --status accepts, for --help: built from
// internal/records, which reads them, so it cannot fall behind.
func statusHelp() string {
	var b strings.Builder
	b.WriteString("--status takes these names, comma-separated, in any case (a space or a\nhyphen for an underscore):\n")
	const indent, width = 14, 76
	for _, st := range records.Selectable() {
		line := fmt.Sprintf("  %-*s%s", indent-2, st, statusMeaning[st])
		if syn := records.Synonyms(st); len(syn) > 0 {
			line += "; also"
			for i, w := range syn {
				sep := " "
				if i < len(syn)-1 {
					w += ","
				}
				if len(line)+len(sep)+len(w) > width {
					b.WriteString(line + "\n")
					line, sep = strings.Repeat(" ", indent), ""
				}
				line += sep + w
			}
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// statusFlagUsage is --status's line in the flag list.
const statusFlagUsage = "only these statuses, comma-separated: PROCESSING, LOCKED, COMPLETED, FAILED, EXPIRED, UNKNOWN, or a word listed above for one (DONE, INPROGRESS, ...)"

// parseStatuses reads --status A,B.
func parseStatuses(s string) ([]records.Status, error) {
	if s == "" {
		return nil, nil
	}
	var out []records.Status
	for _, part := range strings.Split(s, ",") {
		st, ok := records.ParseStatus(strings.TrimSpace(part))
		if !ok {
			return nil, &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--status %q: want PROCESSING, LOCKED, COMPLETED, FAILED, EXPIRED or UNKNOWN", part),
				Hint: "a status word applications write is read too (DONE, INPROGRESS, ...): --help lists every one"}
		}
		out = append(out, st)
	}
	return out, nil
}

// completeStatuses offers --status's values and their words, after a comma
// the rest of the list, in the case the user types in.
func completeStatuses(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done, word := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, word = toComplete[:i+1], toComplete[i+1:]
	}
	given := map[records.Status]bool{}
	for _, part := range strings.Split(done, ",") {
		if st, ok := records.ParseStatus(part); ok {
			given[st] = true
		}
	}
	lower := word != "" && word == strings.ToLower(word)
	var out []string
	for _, st := range records.Selectable() {
		if given[st] {
			continue
		}
		names := []string{string(st)}
		if word != "" {
			names = append(names, records.Synonyms(st)...)
		}
		for _, n := range names {
			if !strings.HasPrefix(n, strings.ToUpper(word)) {
				continue
			}
			if lower {
				n = strings.ToLower(n)
			}
			out = append(out, done+n)
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
