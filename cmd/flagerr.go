package cmd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pflag's text for a value its flag type cannot parse:
// invalid argument "abc" for "--retries" flag: strconv.ParseInt: ...
var badFlagValue = regexp.MustCompile(`^invalid argument "((?:[^"\\]|\\.)*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)

// The annotations of an integer flag that flagError's hint reads: its unit
// and an example value, where the generic "3" would mislead (three bytes).
const (
	unitAnnotation    = "idmpctl_unit"
	exampleAnnotation = "idmpctl_example"
)

// annotateExample gives fs's flag name a unit (or "") and an example value.
func annotateExample(fs *pflag.FlagSet, name, unit, example string) {
	if unit != "" {
		_ = fs.SetAnnotation(name, unitAnnotation, []string{unit})
	}
	_ = fs.SetAnnotation(name, exampleAnnotation, []string{example})
}

// flagError is the usage error of a flag the command line got wrong: a
// value pflag could not parse says what the flag wants, not Go's parser.
func flagError(c *cobra.Command, err error) error {
	// "claim aquire k --lease 1m": the typo is the error, not the flag (the
	// words parsed before the flag are in Args).
	if c.HasSubCommands() {
		if args := c.Flags().Args(); len(args) > 0 {
			return unknownVerb(c, args[0])
		}
	}
	hint := "see '" + c.CommandPath() + " --help'"
	if strings.Contains(err.Error(), "'h' in -h") {
		// "idmpctl -h" alone, as one asks git or ls for help.
		hint = "-h is the server's host, as in redis-cli (-h HOST); --help shows help"
	}
	if amongFields(c) {
		hint = fieldsHint // "xadd s --pid p --iid i amount -5"
	}
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return &exit.Error{Code: exit.Usage, Err: err, Hint: hint}
	}
	value, name := m[1], m[2]
	if v, uerr := strconv.Unquote(`"` + value + `"`); uerr == nil {
		value = v
	}
	// Only a Go parser's text is replaced: a flag of our own type says what
	// is wrong itself (errTwice).
	why, example := m[3], ""
	goText := strings.HasPrefix(m[3], "strconv.") || strings.HasPrefix(m[3], "time: ")
	if fl := c.Flags().Lookup(strings.TrimPrefix(name, "--")); fl != nil && goText {
		switch fl.Value.Type() {
		case "int", "int64":
			why, example = "want a whole number", "for example "+name+" 3"
			if strings.Contains(m[3], strconv.ErrRange.Error()) {
				why = "want a whole number in range"
			}
			if unit := fl.Annotations[unitAnnotation]; len(unit) == 1 {
				why += " of " + unit[0] // "want a whole number of bytes"
			}
			if ex := fl.Annotations[exampleAnnotation]; len(ex) == 1 {
				example = "for example " + name + " " + ex[0]
			}
		case "duration":
			why, example = "want a duration with its unit", "for example "+name+" 5s, 500ms, 2m or 7d"
		case "bool":
			why, example = "want true or false", "for example "+name+"=false"
		}
	}
	e := &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s %q: %s", name, value, why), Hint: hint}
	if example != "" {
		e.Hint = example
	}
	return e
}

// durationFlag is a time.Duration flag whose value reads as it is typed
// ("24h", never Go's "24h0m0s" in --help's defaults), and takes days (7d).
type durationFlag struct{ d *time.Duration }

func durationVar(fs *pflag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fs.Var(durationFlag{d}, name, usage)
}

func (f durationFlag) Type() string { return "duration" }

func (f durationFlag) Set(s string) error {
	v, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*f.d = v
	return nil
}

func (f durationFlag) String() string {
	if f.d == nil {
		return "0"
	}
	return compactDuration(*f.d)
}

// compactDuration is d as typed, or "0", which --help leaves out as pflag does.
func compactDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return duration.Compact(d)
}

// emptyAllowed marks a string flag whose empty value means something
// (--result "": an empty outcome) or that its command refuses in words of
// its own (cfgset --duration "": Redis's text).
const emptyAllowed = "idmpctl/empty-allowed"

func allowEmpty(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, emptyAllowed, []string{"true"})
	}
}

// refuseEmpty refuses (64) every string flag of c given empty unless it is
// emptyAllowed: an unset shell variable (--pid "$PID") must never pass for
// "not given", which would widen a selection to everything. Every flag, so
// that a new one is covered without being listed.
func refuseEmpty(c *cobra.Command) error {
	var err error
	c.Flags().Visit(func(fl *pflag.Flag) {
		if _, ok := fl.Annotations[emptyAllowed]; err != nil || ok || fl.Value.Type() != "string" || fl.Value.String() != "" {
			return
		}
		err = &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--%s: empty value", fl.Name),
			Hint: "an empty value selects nothing (an unset shell variable?): give a value, or leave the flag out; nothing was changed"}
	})
	return err
}
