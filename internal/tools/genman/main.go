// Command genman writes idmpctl's man pages, idmpctl(1) and one per
// command, with cobra's doc generator, plus EXIT STATUS and ENVIRONMENT
// sections. A separate program, so that cobra/doc and go-md2man are never
// linked into idmpctl. `make man` runs it; its test fails when man/ is
// stale. The pages are reproducible: the date is pinned, no "Auto generated".
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/cmd"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date in every page's header, fixed for reproducible pages.
var manDate = time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)

// environment lists the variables idmpctl reads (a test checks that every
// Getenv in cmd/ is here), then those it sets for claim run's command.
var environment = []struct{ Name, Text string }{
	{"IDMPCTL_URL", "The server URL when --url is not given: redis://[user[:password]@]host[:port][/db], rediss:// for TLS, unix:///path/to/socket."},
	{"REDIS_URL", "The server URL when neither --url nor IDMPCTL_URL is set. Default: " + redisconn.DefaultURL + "."},
	{"IDMPCTL_PASSWORD", "The password, used when the URL has none. Never printed. Safer than a password in --url, which other users can see in ps(1)."},
	{"REDISCLI_AUTH", "The password when the URL has none and IDMPCTL_PASSWORD is not set (as for redis-cli)."},
	{"IDMPCTL_READ_ONLY", "When set to anything but 0, false or no: read-only mode, as --read-only (which wins when given). Every command that could write is refused with 64 before it connects."},
	{"NO_COLOR", "When set to any non-empty value, no colour (like --no-color)."},
	{"CLICOLOR_FORCE", "When set and not 0, colour even when stdout is not a terminal; NO_COLOR and --no-color still win."},
	{"IDMPCTL_FORCE_TTY", "When set, stdin, stdout and stderr are treated as terminals: table output, progress lines and confirmation prompts (for tests and demos)."},
	{"COLUMNS", "The width of a terminal forced with IDMPCTL_FORCE_TTY (default 80), to which tables and views are cut. A real terminal's own width wins; without a terminal, -o table is not cut."},
	{"GOGC, GOMEMLIMIT", "When either is set, inspect --match and purge keep the Go runtime's garbage-collector settings instead of tuning them for long scans."},
	{"GOMAXPROCS", "When set, the Go runtime's threads as it says. Unset, a command of a few round trips (xadd without --batch, claim, cfgset, the calculators) runs on one: a server on the same machine then spends less CPU on it."},
	{"IDMPCTL_KEY, IDMPCTL_TOKEN, IDMPCTL_ATTEMPT", "Set by claim run for the command it runs: the claimed key, the claim's fencing token and the attempt number."},
}

// exitStatusPointer is the EXIT STATUS of every page but idmpctl(1), which
// has the table.
var exitStatusPointer = ".SH EXIT STATUS\n" + roffText("0 on success. The other codes, a contract, are listed in idmpctl(1) under EXIT STATUS, and by idmpctl help exit-codes.") + "\n"

// claimRunNote follows the exit-code list on the pages it concerns.
const claimRunNote = "claim run passes the command's own exit code through when it ran; idmpctl's own codes then mean that it did not run (or lost its claim), which JSON output and stderr also say."

func main() {
	dir := flag.String("dir", "man", "directory to write the pages to (stale *.1 files in it are removed)")
	flag.Parse()
	if err := write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
}

// write generates every page into dir and removes *.1 files there that no
// command has any more.
func write(dir string) error {
	pages, err := generate()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.1")) // only a bad pattern fails
	for _, f := range old {
		if _, ok := pages[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generate returns every page by file name.
func generate() (map[string][]byte, error) {
	f := &cmd.Factory{
		In: strings.NewReader(""), Out: io.Discard, Err: io.Discard,
		Getenv: func(string) string { return "" },
		IsTTY:  func(any) bool { return false },
		Now:    func() time.Time { return manDate },
	}
	root := cmd.NewRootCmd(f)
	exits, err := exitStatus()
	if err != nil {
		return nil, err
	}
	env := ".SH ENVIRONMENT\n"
	for _, v := range environment {
		env += fmt.Sprintf(".TP\n.B %s\n%s\n", roffText(v.Name), roffText(v.Text))
	}
	pages := map[string][]byte{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := walk(sub); err != nil {
				return err
			}
		}
		c.DisableAutoGenTag = true
		c.Long = manLong(c.Long)
		date := manDate
		header := &doc.GenManHeader{Section: "1", Date: &date, Source: "idmpctl", Manual: "idmpctl manual"}
		var buf bytes.Buffer
		if err := doc.GenMan(c, header, &buf); err != nil {
			return fmt.Errorf("%s: %w", c.CommandPath(), err)
		}
		// The whole table on idmpctl(1) only, as the exit-codes help topic
		// is the one place --help has it; the other pages point there.
		extra := exits
		if c != root {
			extra = exitStatusPointer
		}
		if c == root || strings.HasPrefix(c.CommandPath(), "idmpctl claim run") {
			extra += ".PP\n" + roffText(claimRunNote) + "\n"
		}
		extra += env
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		pages[name] = []byte(noHyphenation(optionLists(insertSections(buf.String(), extra))))
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return pages, nil
}

// manLong turns a command's help text into the markdown cobra/doc renders:
// indented lines (tables, formulas, samples) become literal blocks instead of
// being filled into the paragraph, and the rest is escaped so that text like
// "ID<TAB>added" is not taken for markup.
func manLong(s string) string {
	var out []string
	literal := false
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			literal = false
			out = append(out, "")
		case strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t"):
			if !literal && len(out) > 0 && out[len(out)-1] != "" {
				out = append(out, "") // a literal block cannot interrupt a paragraph
			}
			literal = true
			out = append(out, "    "+l)
		default:
			if literal {
				out = append(out, "")
				literal = false
			}
			out = append(out, markdownEscaper.Replace(l))
		}
	}
	return strings.Join(out, "\n")
}

// markdownEscaper escapes what markdown would read as emphasis, links, code
// spans or HTML in plain help text.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`,
	`[`, `\[`, `]`, `\]`, `<`, `\<`, `>`, `\>`, `#`, `\#`)

// insertSections puts extra (roff) where man-pages(7) orders EXIT STATUS
// and ENVIRONMENT: after the options, before EXAMPLE and SEE ALSO.
func insertSections(page, extra string) string {
	for _, h := range []string{"\n.SH EXAMPLE\n", "\n.SH SEE ALSO\n"} {
		if i := strings.Index(page, h); i >= 0 {
			return page[:i+1] + extra + page[i+1:]
		}
	}
	if page != "" && !strings.HasSuffix(page, "\n") {
		page += "\n"
	}
	return page + extra
}

// optionLists makes cobra's option entries (a bold flag line, a tab, the
// usage, between .PP paragraphs) tagged paragraphs (.TP): the usage is
// indented under its flag rather than after a tab stop.
func optionLists(page string) string {
	lines := strings.Split(page, "\n")
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, `\fB-`) && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			for len(out) > 0 && (out[len(out)-1] == "" || out[len(out)-1] == ".PP") {
				out = out[:len(out)-1]
			}
			usage := strings.TrimPrefix(lines[i+1], "\t")
			if strings.HasPrefix(usage, ".") || strings.HasPrefix(usage, "'") {
				usage = `\&` + usage
			}
			out = append(out, ".TP", l, usage)
			i++
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// noHyphenation turns hyphenation off after .TH, which turns it back on
// despite cobra's .nh, so no URL or option is broken; HY 0 keeps it off
// after .EE and the like, which restore mode HY.
func noHyphenation(page string) string {
	head, rest, ok := strings.Cut(page, "\n.TH ")
	th, tail, ok2 := strings.Cut(rest, "\n")
	if !ok || !ok2 {
		return page
	}
	return head + "\n.TH " + th + "\n.nr HY 0\n.nh\n" + tail
}

// exitStatus renders exit.Table (the contract printed by --help) as an
// EXIT STATUS section.
func exitStatus() (string, error) {
	lines := strings.Split(strings.TrimSpace(exit.Table), "\n")
	if len(lines) < 2 || !strings.HasSuffix(lines[0], ":") {
		return "", fmt.Errorf("exit.Table: unexpected layout")
	}
	b := ".SH EXIT STATUS\n"
	for i := len(lines) - 1; i > 1; i-- { // a meaning wrapped to 80 columns: one line again
		if strings.HasPrefix(lines[i], "      ") {
			lines[i-1] += " " + strings.TrimSpace(lines[i])
			lines = slices.Delete(lines, i, i+1)
		}
	}
	for _, l := range lines[1:] {
		code, meaning, ok := strings.Cut(strings.TrimSpace(l), " ")
		meaning = strings.TrimSpace(meaning)
		if !ok || meaning == "" || strings.Trim(code, "0123456789") != "" {
			return "", fmt.Errorf("exit.Table: cannot read line %q", l)
		}
		b += fmt.Sprintf(".TP\n.B %s\n%s\n", code, roffText(meaning))
	}
	return b, nil
}

// roffText escapes one line of plain text for roff: backslashes, hyphens
// (so that options stay searchable and copyable) and a leading control
// character.
func roffText(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
