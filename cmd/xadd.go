package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/batch"
	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// XAddOptions are xadd's inputs.
type XAddOptions struct {
	Factory *Factory

	Stream, PID, IID        string
	IIDSet, Auto, Escapes   bool
	Fields                  []string
	JSON, Batch, Mode       string
	MaxLen, Limit           int64 // MAXLEN, and LIMIT of approximate trimming
	MinID                   string
	Approx, NoMkStream      bool
	Skip                    int
	BatchID                 string
	SkipSet, Resume, TTLSet bool // TTLSet: --progress-ttl given (0 included)
	LimitSet, MaxLenSet     bool // --limit given: 0 sends LIMIT 0 (no limit), not Redis's default
	ProgressTTL             time.Duration
	Durable                 WaitFlags

	jsonText string // --json as read by complete (the file or stdin)
}

// complete reads what --json names (@FILE or - for stdin) before validation.
func (o *XAddOptions) complete() (err error) {
	o.jsonText, err = readArg(o.Factory.In, "json", o.JSON, true)
	return err
}

// Validate checks flags and arguments without a server or other I/O.
func (o *XAddOptions) Validate() error {
	if o.Escapes {
		if err := o.unescape(); err != nil {
			return err
		}
	}
	switch {
	case o.Stream == "":
		return exit.Usagef("the stream name must not be empty")
	case o.IIDSet && o.Auto:
		return exit.Usagef("--iid and --auto exclude each other (IDMP/IDMPAUTO specified multiple times)")
	case o.Batch == "" && !o.IIDSet && !o.Auto:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("give --iid IID or --auto"),
			Hint: "--iid names the message; --auto derives it from the fields (IDMPAUTO)"}
	case o.Batch != "" && o.IIDSet:
		return exit.Usagef("--batch takes each iid from its line: drop --iid")
	case o.Batch != "" && (len(o.Fields) > 0 || o.JSON != ""):
		return exit.Usagef("--batch takes the fields from its lines: drop FIELD VALUE and --json")
	case o.PID == "" && o.Auto:
		return exit.Usagef("--pid is required and must not be empty (IDMPAUTO requires a non-empty producer ID)")
	case o.PID == "":
		return exit.Usagef("--pid is required and must not be empty (IDMP requires a non-empty producer ID)")
	case o.IIDSet && o.IID == "":
		return exit.Usagef("--iid must not be empty (IDMP requires a non-empty idempotent ID)")
	case len(o.Fields)%2 != 0:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("fields come in FIELD VALUE pairs: %q has no value", o.Fields[len(o.Fields)-1]), Hint: fieldsHint}
	case o.JSON != "" && len(o.Fields) > 0:
		return exit.Usagef("give the fields as FIELD VALUE pairs or --json, not both")
	case o.Skip < 0:
		return exit.Usagef("--skip %d: must not be negative", o.Skip)
	case o.MaxLenSet && o.MaxLen == 0:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--maxlen 0 would trim every entry of the stream, the one added too"),
			Hint: "give 1 or more, or leave --maxlen out to keep every entry"}
	case o.Limit < 0:
		return exit.Usagef("--limit %d: must not be negative (ERR The LIMIT argument must be >= 0.)", o.Limit)
	case o.Batch == "" && (o.SkipSet || o.BatchID != "" || o.Resume || o.TTLSet):
		return exit.Usagef("--skip, --batch-id, --resume and --progress-ttl go with --batch")
	case o.Resume && o.SkipSet:
		return exit.Usagef("--resume goes on where the progress record says; --skip N starts after line N: give one")
	case o.MinID != "" && !streamID(o.MinID):
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--minid %q: ERR Invalid stream ID specified as stream command argument", o.MinID),
			Hint: "a stream ID is MS or MS-SEQ, for example --minid 1700000000000-0"}
	case o.TTLSet && o.ProgressTTL < stream.MinProgressTTL:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--progress-ttl %s: must be at least %s", duration.Format(o.ProgressTTL), duration.Format(stream.MinProgressTTL)),
			Hint: "the record must outlive the batch's run and the reruns that resume it: a record gone between two chunks has the batch add its lines again (default " + duration.Format(stream.DefaultProgressTTL) + ")"}
	case o.Batch == "" && o.JSON == "" && len(o.Fields) == 0:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("no fields to add"),
			Hint: "give FIELD VALUE pairs after the stream name, or --json '{\"field\":\"value\"}'"}
	}
	if err := o.Durable.validate(); err != nil {
		return err
	}
	if o.JSON != "" {
		fields, err := batch.ParseFields([]byte(o.jsonText))
		if err != nil {
			return exit.Usagef("--json: %v", jsonWords(err))
		}
		o.Fields = fields
	}
	if o.Batch == "" {
		return exit.Wrap(o.request(o.IID, o.Fields).Validate(), "xadd")
	}
	// Check the shared options once; each line's iid and fields are checked as read.
	placeholder := "x"
	if o.Auto {
		placeholder = ""
	}
	return exit.Wrap(o.request(placeholder, []string{"f", "v"}).Validate(), "xadd")
}

// unescape reads --escapes (\xNN, \\): a command line cannot carry a NUL
// byte, so this is how any pid, iid, field or value can be given.
func (o *XAddOptions) unescape() error {
	var err error
	read := func(what string, s *string) {
		if err != nil {
			return
		}
		var u string
		if u, err = unescapeArg(*s); err != nil {
			err = exit.Usagef("--escapes: %s %q: %v", what, *s, err)
		}
		*s = u
	}
	read("--pid", &o.PID)
	read("--iid", &o.IID)
	for i := range o.Fields {
		read("argument", &o.Fields[i])
	}
	return err
}

// unescapeArg decodes \xNN and \\; any other backslash is an error, so a
// typo never passes for data.
func unescapeArg(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '\\':
			b.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == '\\':
			b.WriteByte('\\')
			i++
		case i+3 < len(s) && s[i+1] == 'x' && isHex(s[i+2]) && isHex(s[i+3]):
			n, _ := strconv.ParseUint(s[i+2:i+4], 16, 8)
			b.WriteByte(byte(n))
			i += 3
		default:
			return "", fmt.Errorf(`byte %d: want \xNN (two hex digits) or \\`, i+1)
		}
	}
	return b.String(), nil
}

// streamID says whether s is a stream ID as Redis reads MINID's (MS[-SEQ]).
func streamID(s string) bool {
	ms, seq, hasSeq := strings.Cut(s, "-")
	_, msErr := strconv.ParseUint(ms, 10, 64)
	_, seqErr := strconv.ParseUint(seq, 10, 64)
	return msErr == nil && (!hasSeq || seqErr == nil)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// once is a flag that may be given once: Redis refuses IDMP twice
// ("IDMP/IDMPAUTO specified multiple times"), and so does xadd, rather
// than letting the last one win.
type once struct {
	pflag.Value
	seen bool
}

func (f *once) Set(s string) error {
	if f.seen {
		return errTwice
	}
	f.seen = true
	return f.Value.Set(s)
}

var errTwice = errors.New("IDMP/IDMPAUTO specified multiple times")

// fieldsAnnotation marks xadd, whose arguments after the first are data
// (FIELD VALUE): flags are read anywhere before --, so a --help or -5
// among them is a flag, and its error says to put -- first.
const fieldsAnnotation = "idmpctl/fields"

const fieldsHint = "a FIELD or VALUE that begins with '-' is read as a flag unless -- comes before the fields: idmpctl xadd STREAM --pid P --iid I -- FIELD VALUE..."

// amongFields says whether c's flags were read past its first argument,
// among its fields.
func amongFields(c *cobra.Command) bool {
	_, ok := c.Annotations[fieldsAnnotation]
	return ok && len(c.Flags().Args()) > 1
}

func (o *XAddOptions) request(iid string, fields []string) stream.AddRequest {
	limit := o.Limit
	if o.LimitSet && limit == 0 {
		limit = -1 // AddRequest's LIMIT 0
	}
	return stream.AddRequest{
		Stream: o.Stream, PID: o.PID, IID: iid, Auto: o.Auto, Fields: fields,
		NoMkStream: o.NoMkStream, MaxLen: o.MaxLen, MinID: o.MinID, Approx: o.Approx, Limit: limit,
	}
}

// NewCmdXAdd builds xadd; runF replaces the run step in tests.
func NewCmdXAdd(f *Factory, runF func(*XAddOptions) error) *cobra.Command {
	o := &XAddOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{fieldsAnnotation: ""},
		Use:         "xadd STREAM --pid P (--iid I | --auto) [--] [FIELD VALUE...]",
		Short:       "Add to a stream idempotently (XADD IDMP), one or a batch",
		Long: `Add an entry to a stream at most once per (producer ID, idempotent ID), and say
whether it was a duplicate. Natively on Redis 8.6+ (XADD IDMP / IDMPAUTO),
emulated with atomic server-side Lua elsewhere.

Flags may come before or after the arguments. After --, every argument is a
FIELD or VALUE: put -- before the fields when one may begin with '-' (-5, a
variable's value). Without it such an argument is read as a flag: --help
among the fields is refused (64), never help text and exit 0; -5 is an
unknown flag (64).

A duplicate is success: the reply is the original entry's ID, nothing is
written, and -o json says "duplicate": true. After a network error the same
add is retried (--retries, backoff with jitter); never after a server error.

Batch mode reads NDJSON, one object a line:
  {"iid":"order-17","fields":{"amount":"100"}}
  {"iid":"order-18","fields":[["f","v"],["f","v2"]],"pid":"other"}
  {"iid":{"b64":"AAEC/w=="},"fields":[[{"b64":"AA=="},"v"]]}
and prints one line per input line in order. Every line is added exactly
once: a progress record, written atomically with each chunk of adds, says
which lines are committed, so a run stopped by a malformed line, a network
error or a kill goes on after its last committed line when run again (the
batch is the stream, --pid and --batch-id, which defaults to a digest of the
input's path and first line). --resume insists on a record; --skip N starts
after line N instead.

--wait-replicas N makes each add (each round trip of a batch) wait until N
replicas acknowledged it, for at most --wait-timeout (--wait-aof: WAITAOF,
Redis 7.2+). Fewer is exit 69 with nothing printed for what was not
acknowledged: it stands on the primary, and repeating the same command is
safe (a duplicate; a batch resumes after its committed lines).

Raw output: the entry ID (batch: "ID<TAB>added|duplicate" per line).`,
		Example: `  idmpctl xadd orders --pid api-1 --iid order-17 amount 100
  idmpctl xadd orders --pid api-1 --auto --json '{"amount":"100"}'
  idmpctl xadd orders --pid api-1 --batch orders.ndjson -o json`,
		Args: minArgs(1, "a STREAM"),
		RunE: func(c *cobra.Command, args []string) error {
			o.Stream, o.Fields = args[0], args[1:]
			o.IIDSet, o.SkipSet = c.Flags().Changed("iid"), c.Flags().Changed("skip")
			o.TTLSet, o.LimitSet, o.MaxLenSet = c.Flags().Changed("progress-ttl"), c.Flags().Changed("limit"), c.Flags().Changed("maxlen")
			o.Durable.TimeoutSet = c.Flags().Changed("wait-timeout")
			if !o.TTLSet {
				o.ProgressTTL = 0 // the default, which --batch alone may have
			}
			return runValidated(c, o, runF, xaddRun, o.complete, o.Validate)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.PID, "pid", "", "producer ID")
	fl.StringVar(&o.IID, "iid", "", "idempotent ID of the message")
	allowEmpty(fl, "pid", "iid") // refused by Validate with Redis's words
	fl.BoolVar(&o.Auto, "auto", false, "derive the iid from the fields (IDMPAUTO)")
	for _, name := range []string{"pid", "iid", "auto"} {
		fl.Lookup(name).Value = &once{Value: fl.Lookup(name).Value}
	}
	fl.BoolVar(&o.Escapes, "escapes", false, `read \xNN (any byte) and \\ in --pid, --iid, FIELD and VALUE: binary IDs and values`)
	fl.StringVar(&o.JSON, "json", "", `fields as JSON: {"f":"v"} or [["f","v"],...]; @FILE or - reads it`)
	fl.StringVar(&o.Batch, "batch", "", "NDJSON file of adds, - for stdin")
	fl.IntVar(&o.Skip, "skip", 0, "with --batch: start after line N, whatever the progress record says")
	fl.StringVar(&o.BatchID, "batch-id", "", "with --batch: the batch's identity (default: a digest of the input's path and first line)")
	fl.BoolVar(&o.Resume, "resume", false, "with --batch: go on after the last committed line; fail if there is no progress record")
	durationVar(fl, &o.ProgressTTL, "progress-ttl", stream.DefaultProgressTTL, "with --batch: how long the progress record outlives its last chunk (at least 1m)")
	fl.Int64Var(&o.MaxLen, "maxlen", 0, "trim to MAXLEN N (1 or more)")
	fl.StringVar(&o.MinID, "minid", "", "trim with MINID ID")
	fl.BoolVar(&o.Approx, "approx", false, "approximate trimming (~)")
	fl.Int64Var(&o.Limit, "limit", 0, "LIMIT of approximate trimming (0: no limit; unset: the server's)")
	fl.BoolVar(&o.NoMkStream, "nomkstream", false, "do not create a missing stream (exit 66)")
	addModeFlag(c, &o.Mode)
	addWaitFlags(c, &o.Durable)
	return c
}

func xaddRun(ctx context.Context, o *XAddOptions) error {
	if o.Batch != "" {
		return xaddBatchRun(ctx, o)
	}
	ctx, cancel := o.Factory.callBound(ctx, o.Durable.durability().Timeout)
	defer cancel()
	streams, err := openStreams(ctx, o.Factory, o.Mode)
	if err != nil {
		return err
	}
	// The eviction settings come with the add's round trip (emulated, or
	// native without a wait); the warning goes once, on stderr.
	streams.Conn.WatchEviction = true
	defer func() { warnEviction(ctx, o.Factory.Printer, streams.Conn, err == nil) }()
	p := o.Factory.Printer
	retried := false
	// A moving cluster slot is waited for while --timeout allows; an add
	// not acknowledged is never retried. Raw output is the entry ID alone,
	// as redis-cli's: asking whether it was a duplicate costs a native
	// server more than the add, but not more than a wait, whose error
	// says which it was.
	d := o.Durable.durability()
	res, err := streams.Add(ctx, stream.AddOptions{Durability: d, Retries: o.Factory.Global.Retries,
		NoOutcome: p.Format == render.Raw && !d.On(),
		OnRetry: func(attempt int, err error) {
			retried = true
			if attempt == 0 {
				p.Warnf("xadd: the stream's cluster slot is moving (%v): retrying while --timeout %s allows", err, o.Factory.Global.Timeout)
				return
			}
			p.Warnf("xadd: %v: retrying (%d of %d)", err, attempt, o.Factory.Global.Retries)
		}}, o.request(o.IID, o.Fields))
	if err != nil {
		return exit.Wrap(err, "")
	}
	return p.Show(&view.Add{Stream: o.Stream, PID: o.PID, Auto: o.Auto, Durability: d, Result: res[0], Retried: retried})
}

// warnEviction warns when the server may evict keys (maxmemory with a
// policy other than noeviction); only fetch allows a round trip to ask.
func warnEviction(ctx context.Context, p *render.Printer, conn *redisconn.Conn, fetch bool) {
	if p.Quiet {
		return // nor a round trip to ask
	}
	e, ok := conn.KnownEviction()
	if !ok && fetch {
		e, ok = conn.Eviction(ctx)
	}
	if ok && e.Risky() {
		p.Warnf("%s", e.Warning())
	}
}
