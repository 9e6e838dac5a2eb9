package cmd

// Flag parsing and validation of every verb, through the runF seams: no
// server is started or contacted. What each verb does with Redis is tested
// by the golden scripts (testdata/script) and the fault and scenario tests.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/spf13/cobra"
)

// testFactory has no server: a runF seam must stop before any connection.
func testFactory(stdin string) *Factory {
	return &Factory{In: strings.NewReader(stdin), Out: &bytes.Buffer{}, Err: &bytes.Buffer{},
		Getenv: func(string) string { return "" }, IsTTY: func(any) bool { return false }, Now: time.Now}
}

// execute runs one verb's command under a root with the real one's flag
// error handling, and returns its error.
func execute(t *testing.T, f *Factory, c *cobra.Command, args ...string) error {
	t.Helper()
	root := NewRootCmd(f)
	for _, sub := range root.Commands() {
		if sub.Name() == c.Name() {
			root.RemoveCommand(sub)
		}
	}
	root.AddCommand(c)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return root.ExecuteContext(ctx)
}

// wantUsage checks that err is a usage error (64) whose text holds want.
func wantUsage(t *testing.T, err error, want string) {
	t.Helper()
	if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v (exit %d), want a usage error with %q", err, exit.Code(err), want)
	}
}

func TestXAddOptions(t *testing.T) {
	var got *XAddOptions
	runF := func(o *XAddOptions) error { got = o; return nil }
	f := testFactory("")
	if err := execute(t, f, NewCmdXAdd(f, runF), "xadd", "orders", "--pid", "p", "--iid", "i-1", "amount", "100", "--maxlen", "10", "--approx"); err != nil {
		t.Fatal(err)
	}
	if got.Stream != "orders" || got.PID != "p" || got.IID != "i-1" || !got.IIDSet || strings.Join(got.Fields, " ") != "amount 100" ||
		got.MaxLen != 10 || !got.Approx || got.Mode != "auto" {
		t.Errorf("parsed %+v", got)
	}

	// --limit 0, given, is LIMIT 0 (no limit), not Redis's default limit.
	for _, c := range []struct {
		args  []string
		limit int64
	}{{nil, 0}, {[]string{"--limit", "0"}, -1}, {[]string{"--limit", "7"}, 7}} {
		f := testFactory("")
		if err := execute(t, f, NewCmdXAdd(f, runF), append([]string{"xadd", "s", "--pid", "p", "--iid", "i", "--maxlen", "9", "--approx", "f", "v"}, c.args...)...); err != nil {
			t.Fatal(err)
		}
		if r := got.request(got.IID, got.Fields); r.Limit != c.limit {
			t.Errorf("%v: AddRequest.Limit %d, want %d", c.args, r.Limit, c.limit)
		}
	}

	// --json @FILE is read before validation; - reads stdin.
	file := filepath.Join(t.TempDir(), "fields.json")
	if err := os.WriteFile(file, []byte(`[["b","2"],["a","1"]]`), 0o644); err != nil {
		t.Fatal(err)
	}
	got = nil
	f = testFactory("")
	if err := execute(t, f, NewCmdXAdd(f, runF), "xadd", "s", "--pid", "p", "--auto", "--json", "@"+file); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Fields, " ") != "b 2 a 1" || !got.Auto {
		t.Errorf("--json @file: %+v", got)
	}
	f = testFactory(`{"k":"v"}`)
	if err := execute(t, f, NewCmdXAdd(f, runF), "xadd", "s", "--pid", "p", "--iid", "x", "--json", "-"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Fields, " ") != "k v" {
		t.Errorf("--json -: %+v", got.Fields)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"s", "--pid", "p", "--iid", "i", "--auto", "f", "v"}, "--iid and --auto exclude each other"},
		{[]string{"s", "--pid", "p", "f", "v"}, "give --iid IID or --auto"},
		{[]string{"s", "--pid", "p", "--iid", "i", "f"}, `"f" has no value`},
		{[]string{"s", "--pid", "p", "--iid", "i"}, "no fields to add"},
		{[]string{"s", "--iid", "i", "f", "v"}, "--pid is required"},
		{[]string{"s", "--pid", "p", "--iid", "", "f", "v"}, "--iid must not be empty"},
		{[]string{"s", "--pid", "p", "--batch", "in.ndjson", "--iid", "i"}, "drop --iid"},
		{[]string{"s", "--pid", "p", "--batch", "in.ndjson", "f", "v"}, "drop FIELD VALUE"},
		{[]string{"s", "--pid", "p", "--iid", "i", "--skip", "2", "f", "v"}, "--skip, --batch-id, --resume and --progress-ttl go with --batch"},
		{[]string{"s", "--pid", "p", "--batch", "in.ndjson", "--skip", "2", "--resume"}, "give one"},
		{[]string{"s", "--pid", "p", "--iid", "i", "--json", "{}", "f", "v"}, "not both"},
		{[]string{"s", "--pid", "p", "--iid", "i", "--limit", "5", "--maxlen", "9", "f", "v"}, "LIMIT cannot be used without"},
		{[]string{"s", "--pid", "p", "--iid", "i", "--limit", "0", "--maxlen", "9", "f", "v"}, "LIMIT cannot be used without"},
		{[]string{"s", "--pid", "p", "--iid", "i", "--limit", "-1", "--maxlen", "9", "--approx", "f", "v"}, "--limit -1: must not be negative"},
		{[]string{"s", "--pid", "p", "--iid", "i", "--maxlen", "0", "f", "v"}, "--maxlen 0 would trim every entry"},
		{[]string{"s", "--pid", "p", "--iid", "i", "--nosuchflag", "f", "v"}, "unknown flag"},
		{[]string{}, "needs a STREAM"},
	} {
		f := testFactory("")
		called := false
		err := execute(t, f, NewCmdXAdd(f, func(*XAddOptions) error { called = true; return nil }), append([]string{"xadd"}, c.args...)...)
		wantUsage(t, err, c.want)
		if called {
			t.Errorf("%v: runF called after a usage error", c.args)
		}
	}
}

func TestCfgSetOptions(t *testing.T) {
	var got *CfgSetOptions
	f := testFactory("")
	if err := execute(t, f, NewCmdCfgSet(f, func(o *CfgSetOptions) error { got = o; return nil }),
		"cfgset", "orders", "--duration", "1000", "--maxsize", "100", "--yes", "--mode", "emulated"); err != nil {
		t.Fatal(err)
	}
	if got.Stream != "orders" || got.Duration != 1000 || got.MaxSize != 100 || !got.Yes || got.Mode != "emulated" {
		t.Errorf("parsed %+v", got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"s"}, "give --duration, --maxsize or both"},
		{[]string{"s", "--duration", "0"}, "IDMP-DURATION must be between 1 and 86400 seconds"},
		{[]string{"s", "--maxsize", "10001"}, "IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{[]string{"s", "--duration", "3.14"}, "not an integer"},
		{[]string{"a", "b", "--duration", "5"}, "needs 1 argument"},
	} {
		f := testFactory("")
		wantUsage(t, execute(t, f, NewCmdCfgSet(f, func(*CfgSetOptions) error { return nil }), append([]string{"cfgset"}, c.args...)...), c.want)
	}
}

func TestCalcMaxsizeOptions(t *testing.T) {
	var got *CalcMaxsizeOptions
	f := testFactory("")
	if err := execute(t, f, NewCmdCalcMaxsize(f, func(o *CalcMaxsizeOptions) error { got = o; return nil }),
		"calc-maxsize", "--rate", "1k/s", "--mark-delay", "80ms", "--recovery", "17m", "--producers", "2"); err != nil {
		t.Fatal(err)
	}
	in := got.Inputs
	if in.Rate.RatString() != "1000" || in.MarkDelay != 80*time.Millisecond || in.Recovery != 17*time.Minute ||
		in.Producers != 2 || in.Margin.RatString() != "1/4" {
		t.Errorf("parsed %+v", in)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mark-delay", "80ms"}, "--rate is required"},
		{[]string{"--rate", "1000"}, "--mark-delay is required"},
		{[]string{"--rate", "1000", "--mark-delay", "80"}, "mark-delay"},
		{[]string{"--rate", "1000", "--mark-delay", "80ms", "--producers", "0"}, "--producers 0"},
		{[]string{"--rate", "1000", "--mark-delay", "80ms", "extra"}, "takes no arguments"},
	} {
		f := testFactory("")
		wantUsage(t, execute(t, f, NewCmdCalcMaxsize(f, func(*CalcMaxsizeOptions) error { return nil }), append([]string{"calc-maxsize"}, c.args...)...), c.want)
	}
}

func TestCalcTTLOptions(t *testing.T) {
	var got *CalcTTLOptions
	f := testFactory("")
	if err := execute(t, f, NewCmdCalcTTL(f, func(o *CalcTTLOptions) error { got = o; return nil }),
		"calc-ttl", "--rate", "100/s", "--max-processing", "5m", "--max-retry-delay", "1h", "--buffer", "10m",
		"--key-size", "40b", "--value-size", "2kb", "--maxmemory", "4gb"); err != nil {
		t.Fatal(err)
	}
	in := got.Inputs
	if in.Rate.RatString() != "100" || !in.Window || in.TTL != 0 || in.MaxProcessing != 5*time.Minute ||
		in.MaxRetryDelay != time.Hour || in.Buffer != 10*time.Minute || in.KeySize != 40 || in.ValueSize != 2048 ||
		in.MaxMemory != 4<<30 || got.Samples != defaultTTLSamples || got.Sample != "" {
		t.Errorf("parsed %+v", in)
	}
	// --sample alone: the sizes are measured (-1: not given).
	if err := execute(t, f, NewCmdCalcTTL(f, func(o *CalcTTLOptions) error { got = o; return nil }),
		"calc-ttl", "--rate", "100", "--ttl", "24h", "--sample", "idem:*", "--samples", "50"); err != nil {
		t.Fatal(err)
	}
	if in := got.Inputs; got.Sample != "idem:*" || got.Samples != 50 || in.KeySize != -1 || in.ValueSize != -1 || in.TTL != 24*time.Hour || in.Window {
		t.Errorf("parsed %+v (sample %q)", in, got.Sample)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ttl", "24h", "--key-size", "40", "--value-size", "80"}, "--rate is required"},
		{[]string{"--rate", "100", "--key-size", "40", "--value-size", "80"}, "give --ttl"},
		{[]string{"--rate", "100", "--max-retry-delay", "1h", "--key-size", "40", "--value-size", "80"}, "needs both"},
		{[]string{"--rate", "100", "--ttl", "24h"}, "give --key-size and --value-size"},
		{[]string{"--rate", "100", "--ttl", "24h", "--sample", ""}, "--sample: empty value"},
		{[]string{"--rate", "100", "--ttl", "24h", "--sample", "x*", "--samples", "100001"}, "--samples 100001"},
		{[]string{"--rate", "100", "--ttl", "24h", "--key-size", "40", "--value-size", "-1"}, "must not be negative"},
		{[]string{"--rate", "100", "--ttl", "24h", "--key-size", "40", "--value-size", "80", "extra"}, "takes no arguments"},
	} {
		f := testFactory("")
		wantUsage(t, execute(t, f, NewCmdCalcTTL(f, func(*CalcTTLOptions) error { return nil }), append([]string{"calc-ttl"}, c.args...)...), c.want)
	}
}

func TestInspectOptions(t *testing.T) {
	var got *InspectOptions
	f := testFactory("")
	if err := execute(t, f, NewCmdInspect(f, func(o *InspectOptions) error { got = o; return nil }),
		"inspect", "orders", "--watch", "1s", "--count", "3"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Keys, ",") != "orders" || got.Watch != "1s" || got.Count != 3 {
		t.Errorf("parsed %+v", got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "inspect needs KEY..., --match PATTERN or --server"},
		{[]string{"k", "--server"}, "give one of"},
		{[]string{"--match", "x:*", "--limit", "-1"}, "--limit -1"},
		// Flags that mean nothing here are refused, not ignored.
		{[]string{"orders", "--status", "FAILED"}, "--status goes with --match PATTERN"},
		{[]string{"orders", "--limit", "5"}, "--limit goes with --match PATTERN"},
		{[]string{"--server", "--all"}, "--all goes with --match PATTERN"},
		{[]string{"orders", "--count", "3"}, "--count goes with --watch INTERVAL"},
		{[]string{"--match", "x:*", "--watch", "1s"}, "--watch redraws a stream"},
		{[]string{"--server", "--watch", "1s"}, "--watch redraws a stream"},
		{[]string{"a", "b", "--watch", "1s"}, "--watch redraws one stream: give one STREAM (2 keys given)"},
		{[]string{"orders", "--watch", "5"}, `--watch "5": want an interval of at least 10ms with its unit`},
		{[]string{"orders", "--watch", "1s", "--count", "-1"}, "--count -1: must not be negative"},
	} {
		f := testFactory("")
		wantUsage(t, execute(t, f, NewCmdInspect(f, func(*InspectOptions) error { return nil }), append([]string{"inspect"}, c.args...)...), c.want)
	}
}

func TestPurgeOptions(t *testing.T) {
	var got *PurgeOptions
	f := testFactory("")
	if err := execute(t, f, NewCmdPurge(f, func(o *PurgeOptions) error { got = o; return nil }),
		"purge", "--match", "idem:*", "--status", "failed,STARTED", "--older-than", "24h", "--max-rate", "5k/s", "--dry-run"); err != nil {
		t.Fatal(err)
	}
	ops := got.Ops
	if ops.Pattern != "idem:*" || len(ops.Statuses) != 2 || ops.Statuses[0] != records.Failed || ops.Statuses[1] != records.Processing ||
		ops.OlderThan != 24*time.Hour || ops.MaxRate != 5000 || !ops.DryRun {
		t.Errorf("parsed %+v", ops)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "purge needs --match PATTERN or --stream STREAM"},
		{[]string{"--match", "a", "--stream", "s"}, "not both"},
		{[]string{"--stream", "s", "--status", "FAILED"}, "--stream takes only"},
		{[]string{"--match", "a", "--pid", "p"}, "--pid goes with --stream"},
		{[]string{"--match", "a", "--status", "NOPE"}, `--status "NOPE"`},
		{[]string{"--match", "a", "--older-than", "24"}, "older-than"},
		{[]string{"--match", "a", "--limit", "-1"}, "--limit must not be negative"},
	} {
		f := testFactory("")
		wantUsage(t, execute(t, f, NewCmdPurge(f, func(*PurgeOptions) error { return nil }), append([]string{"purge"}, c.args...)...), c.want)
	}
}

func TestClaimVerbOptions(t *testing.T) {
	payload := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(payload, []byte(`{"amount":100}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var acq *ClaimStepOptions
	f := testFactory("")
	if err := execute(t, f, newCmdClaimStep(f, "acquire", func(o *ClaimStepOptions) error { acq = o; return nil }),
		"acquire", "pay:1", "--lease", "1m", "--payload", "@"+payload, "--max-attempts", "3"); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if acq.Key != "pay:1" || acq.Lease != time.Minute || acq.TTL != 24*time.Hour || acq.MaxAttempts != 3 ||
		!strings.HasPrefix(acq.Owner, host+":") || acq.fingerprint != claim.Fingerprint([]byte(`{"amount":100}`)) {
		t.Errorf("acquire parsed %+v", acq)
	}

	var cmp *ClaimStepOptions
	f = testFactory("charged 100")
	if err := execute(t, f, newCmdClaimStep(f, "complete", func(o *ClaimStepOptions) error { cmp = o; return nil }),
		"complete", "pay:1", "--token", "2", "--result", "-"); err != nil {
		t.Fatal(err)
	}
	if cmp.Token != 2 || !cmp.ResultSet || cmp.Result != "charged 100" {
		t.Errorf("complete parsed %+v", cmp)
	}

	var fail *ClaimStepOptions
	f = testFactory("")
	if err := execute(t, f, newCmdClaimStep(f, "fail", func(o *ClaimStepOptions) error { fail = o; return nil }),
		"fail", "pay:1", "--token", "1", "--error", "card declined", "--release"); err != nil {
		t.Fatal(err)
	}
	if fail.Token != 1 || fail.ErrorText != "card declined" || !fail.Release {
		t.Errorf("fail parsed %+v", fail)
	}

	var run *RunOptions
	f = testFactory("")
	if err := execute(t, f, NewCmdClaimRun(f, func(o *RunOptions) error { run = o; return nil }),
		"run", "job:1", "--wait", "2s", "--", "sh", "-c", "echo hi"); err != nil {
		t.Fatal(err)
	}
	if run.Key != "job:1" || run.Wait != 2*time.Second || strings.Join(run.Command, "|") != "sh|-c|echo hi" {
		t.Errorf("run parsed %+v", run)
	}

	never := func(string) func() error {
		return func() error { t.Error("runF called after a usage error"); return nil }
	}
	verbs := map[string]func(f *Factory) *cobra.Command{
		"acquire": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "acquire", func(*ClaimStepOptions) error { return never("")() })
		},
		"renew": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "renew", func(*ClaimStepOptions) error { return never("")() })
		},
		"complete": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "complete", func(*ClaimStepOptions) error { return never("")() })
		},
		"release": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "release", func(*ClaimStepOptions) error { return never("")() })
		},
		"run": func(f *Factory) *cobra.Command {
			return NewCmdClaimRun(f, func(*RunOptions) error { return never("")() })
		},
	}
	for _, c := range []struct {
		verb string
		args []string
		want string
	}{
		{"acquire", []string{"k", "--lease", "2h", "--ttl", "1h"}, "--lease 2h is longer than --ttl 1h"},
		{"acquire", []string{"k", "--owner", ""}, "--owner must not be empty"},
		{"acquire", []string{"k", "--max-attempts", "-1"}, "--max-attempts -1"},
		{"acquire", []string{""}, "the KEY must not be empty"},
		{"acquire", []string{"a", "b"}, "needs 1 argument"},
		{"renew", []string{"k"}, "--token is required"},
		{"complete", []string{"k", "--token", "0"}, "--token is required"},
		{"release", []string{"k", "--token", "-3"}, "--token -3: a fencing token is 1 or more"},
		// Flags a verb does not use are refused, not ignored.
		{"release", []string{"k", "--token", "1", "--payload", "x"}, "unknown flag: --payload"},
		{"release", []string{"k", "--token", "1", "--max-result", "9"}, "unknown flag: --max-result"},
		{"release", []string{"k", "--token", "1", "--lease", "1m"}, "unknown flag: --lease"},
		{"release", []string{"k", "--token", "1", "--ttl", "1h"}, "unknown flag: --ttl"},
		{"complete", []string{"k", "--token", "1", "--owner", "w1"}, "unknown flag: --owner"},
		{"renew", []string{"k", "--token", "1", "--payload", "x"}, "unknown flag: --payload"},
		{"run", []string{"k", "true"}, "claim run needs KEY -- COMMAND"},
		{"run", []string{"k", "--wait", "-1s", "--", "true"}, "--wait -1s"},
		{"run", []string{"k", "--max-result", "-1", "--", "true"}, "--max-result -1"},
	} {
		f := testFactory("")
		wantUsage(t, execute(t, f, verbs[c.verb](f), append([]string{c.verb}, c.args...)...), c.want)
	}
}

// Redis's XADD and XCFGSET forms and errors, with its wording.
func TestRedisWording(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"xadd", "s", "--pid", "a", "--pid", "b", "--iid", "i", "f", "v"}, "IDMP/IDMPAUTO specified multiple times"},
		{[]string{"xadd", "s", "--pid", "a", "--iid", "i", "--iid", "j", "f", "v"}, "IDMP/IDMPAUTO specified multiple times"},
		{[]string{"xadd", "s", "--pid", "a", "--auto", "--auto", "f", "v"}, "IDMP/IDMPAUTO specified multiple times"},
		{[]string{"xadd", "s", "--pid", "", "--auto", "f", "v"}, "IDMPAUTO requires a non-empty producer ID"},
		{[]string{"xadd", "s", "--pid", "", "--iid", "i", "f", "v"}, "IDMP requires a non-empty producer ID"},
		{[]string{"xadd", "s", "--pid", "p", "--iid", `\x0`, "--escapes", "f", "v"}, `want \xNN`},
		{[]string{"cfgset", "s"}, "ERR At least one parameter"},
		{[]string{"cfgset", "s", "--duration"}, "flag needs an argument: --duration"},
		{[]string{"cfgset", "s", "--maxsize"}, "flag needs an argument: --maxsize"},
		{[]string{"cfgset", "s", "--invalid", "5"}, "unknown flag: --invalid"},
		{[]string{"cfgset", "s", "--duration", "0"}, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{[]string{"cfgset", "s", "--duration", "-100"}, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{[]string{"cfgset", "s", "--duration", "86401"}, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{[]string{"cfgset", "s", "--maxsize", "0"}, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{[]string{"cfgset", "s", "--maxsize", "-50"}, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{[]string{"cfgset", "s", "--maxsize", "10001"}, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
	} {
		f := testFactory("")
		var cmd *cobra.Command
		if c.args[0] == "xadd" {
			cmd = NewCmdXAdd(f, func(*XAddOptions) error { return nil })
		} else {
			cmd = NewCmdCfgSet(f, func(*CfgSetOptions) error { return nil })
		}
		wantUsage(t, execute(t, f, cmd, c.args...), c.want)
	}
	for _, flag := range []string{"--duration", "--maxsize"} {
		for _, v := range []string{"A", "AAA", "*", "-", "+", "120-5", "3.14", "000000000", "IDMP-DURATION", "0100", "+5", "007", ""} {
			f := testFactory("")
			err := execute(t, f, NewCmdCfgSet(f, func(*CfgSetOptions) error { return nil }), "cfgset", "s", flag+"="+v)
			wantUsage(t, err, "ERR value is not an integer or out of range")
		}
	}
	// --escapes: any byte string, NUL included.
	var got *XAddOptions
	f := testFactory("")
	if err := execute(t, f, NewCmdXAdd(f, func(o *XAddOptions) error { got = o; return nil }),
		"xadd", "s", "--escapes", "--pid", `\x00\x01\x02\xff`, "--iid", `a\\b\x00`, `f\x00`, `\xFFv`); err != nil {
		t.Fatal(err)
	}
	if got.PID != "\x00\x01\x02\xff" || got.IID != `a\b`+"\x00" || got.Fields[0] != "f\x00" || got.Fields[1] != "\xffv" {
		t.Errorf("--escapes: %q %q %q", got.PID, got.IID, got.Fields)
	}
}

// --wait-replicas, --wait-timeout and --wait-aof on every claim verb and
// xadd: parsed into what each write must reach, checked without a server.
func TestWaitFlags(t *testing.T) {
	var acq *ClaimStepOptions
	f := testFactory("")
	if err := execute(t, f, newCmdClaimStep(f, "acquire", func(o *ClaimStepOptions) error { acq = o; return nil }),
		"acquire", "k", "--wait-replicas", "2", "--wait-timeout", "250ms", "--wait-aof"); err != nil {
		t.Fatal(err)
	}
	if d := acq.Durable.durability(); d.Replicas != 2 || d.Timeout != 250*time.Millisecond || !d.AOF {
		t.Errorf("acquire: durability %+v", d)
	}
	var run *RunOptions
	f = testFactory("")
	if err := execute(t, f, NewCmdClaimRun(f, func(o *RunOptions) error { run = o; return nil }),
		"run", "k", "--wait-replicas", "1", "--wait", "2s", "--", "true"); err != nil {
		t.Fatal(err)
	}
	if d := run.Durable.durability(); d.Replicas != 1 || d.Timeout != time.Second || d.AOF || run.Wait != 2*time.Second {
		t.Errorf("run: durability %+v (default timeout 1s), --wait %s", d, run.Wait)
	}
	var add *XAddOptions
	f = testFactory("")
	if err := execute(t, f, NewCmdXAdd(f, func(o *XAddOptions) error { add = o; return nil }),
		"xadd", "s", "--pid", "p", "--iid", "i", "--wait-aof", "f", "v"); err != nil {
		t.Fatal(err)
	}
	if d := add.Durable.durability(); d.Replicas != 0 || !d.AOF || d.Timeout != time.Second {
		t.Errorf("xadd --wait-aof alone (local AOF only): durability %+v", d)
	}
	f = testFactory("")
	if err := execute(t, f, newCmdClaimStep(f, "release", func(o *ClaimStepOptions) error {
		if o.Durable.durability().On() {
			t.Errorf("no wait flags: durability %+v", o.Durable.durability())
		}
		return nil
	}), "release", "k", "--token", "1"); err != nil {
		t.Fatal(err)
	}

	verbs := map[string]func(f *Factory) *cobra.Command{
		"acquire": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "acquire", func(*ClaimStepOptions) error { return nil })
		},
		"renew": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "renew", func(*ClaimStepOptions) error { return nil })
		},
		"complete": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "complete", func(*ClaimStepOptions) error { return nil })
		},
		"fail": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "fail", func(*ClaimStepOptions) error { return nil })
		},
		"release": func(f *Factory) *cobra.Command {
			return newCmdClaimStep(f, "release", func(*ClaimStepOptions) error { return nil })
		},
		"run":  func(f *Factory) *cobra.Command { return NewCmdClaimRun(f, func(*RunOptions) error { return nil }) },
		"xadd": func(f *Factory) *cobra.Command { return NewCmdXAdd(f, func(*XAddOptions) error { return nil }) },
	}
	base := map[string][]string{
		"acquire": {"k"}, "renew": {"k", "--token", "1"}, "complete": {"k", "--token", "1"},
		"fail": {"k", "--token", "1"}, "release": {"k", "--token", "1"}, "run": {"k"},
		"xadd": {"s", "--pid", "p", "--iid", "i"},
	}
	tail := map[string][]string{"run": {"--", "true"}, "xadd": {"f", "v"}}
	for verb := range verbs {
		for _, c := range []struct {
			flags []string
			want  string
		}{
			{[]string{"--wait-replicas", "-1"}, "--wait-replicas -1: must not be negative"},
			{[]string{"--wait-replicas", "1", "--wait-timeout", "0s"}, "--wait-timeout 0s: must be at least 1ms"},
			{[]string{"--wait-aof", "--wait-timeout", "-1s"}, "--wait-timeout -1s: must be at least 1ms"},
			{[]string{"--wait-replicas", "1", "--wait-timeout", "500us"}, "must be at least 1ms"},
			{[]string{"--wait-timeout", "2s"}, "--wait-timeout goes with --wait-replicas N or --wait-aof"},
			{[]string{"--wait-replicas", "1", "--wait-timeout", "soon"}, `--wait-timeout "soon": want a duration with its unit`},
			{[]string{"--wait-replicas", "two"}, `--wait-replicas "two": want a whole number`},
		} {
			args := append(append(append([]string{verb}, base[verb]...), c.flags...), tail[verb]...)
			f := testFactory("")
			err := execute(t, f, verbs[verb](f), args...)
			if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: err = %v (exit %d), want a usage error with %q", args, err, exit.Code(err), c.want)
			}
		}
	}
}

// TestMissingInputFiles: an input file that cannot be read is 66 (the
// contract's "not found"), whichever flag names it, before any server.
func TestMissingInputFiles(t *testing.T) {
	for _, args := range [][]string{
		{"xadd", "s", "--pid", "p", "--iid", "i", "--json", "@/nonexistent/x.json"},
		{"acquire", "k", "--payload", "@/nonexistent/p"},
		{"complete", "k", "--token", "1", "--result", "@/nonexistent/r"},
	} {
		f := testFactory("")
		var c *cobra.Command
		switch args[0] {
		case "xadd":
			c = NewCmdXAdd(f, func(*XAddOptions) error { t.Errorf("%v: ran", args); return nil })
		case "acquire":
			c = newCmdClaimStep(f, "acquire", func(*ClaimStepOptions) error { t.Errorf("%v: ran", args); return nil })
		case "complete":
			c = newCmdClaimStep(f, "complete", func(*ClaimStepOptions) error { t.Errorf("%v: ran", args); return nil })
		}
		err := execute(t, f, c, args...)
		if exit.Code(err) != exit.NotFound || !strings.Contains(err.Error(), `"/nonexistent/`) || !strings.Contains(err.Error(), "no such file or directory") {
			t.Errorf("%v: err = %v (exit %d), want 66 naming the file", args, err, exit.Code(err))
		}
	}
}

// TestClaimVerbHelp: each claim verb's --help lists its own flags, and none
// of the others' (the verbs once shared one set, each using part of it).
func TestClaimVerbHelp(t *testing.T) {
	all := []string{"--owner", "--lease", "--ttl", "--payload", "--max-attempts", "--max-result", "--token", "--result", "--error", "--release", "--wait "}
	for verb, own := range map[string][]string{
		"acquire":  {"--owner", "--lease", "--ttl", "--payload", "--max-attempts"},
		"renew":    {"--token", "--lease", "--ttl"},
		"complete": {"--token", "--result", "--ttl", "--max-result"},
		"fail":     {"--token", "--error", "--release", "--ttl"},
		"release":  {"--token"},
		"run":      {"--owner", "--lease", "--ttl", "--payload", "--max-attempts", "--max-result", "--wait "},
	} {
		f := testFactory("")
		root := NewRootCmd(f)
		root.SetArgs([]string{"claim", verb, "--help"})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		help := f.Out.(*bytes.Buffer).String()
		for _, flag := range all {
			if got, want := strings.Contains(help, "  "+flag) || strings.Contains(help, ", "+flag), slices.Contains(own, flag); got != want {
				t.Errorf("claim %s --help lists %s: %v, want %v", verb, flag, got, want)
			}
		}
		if !strings.Contains(help, "--wait-replicas") {
			t.Errorf("claim %s --help has no --wait-replicas", verb)
		}
	}
}

// TestCalcApplyFlags: --yes, --dry-run and --mode mean something only with
// --apply; alone they are refused rather than ignored.
func TestCalcApplyFlags(t *testing.T) {
	for _, flag := range [][]string{{"--yes"}, {"--dry-run"}, {"--mode", "emulated"}} {
		f := testFactory("")
		args := append([]string{"calc-maxsize", "--rate", "1000/s", "--mark-delay", "80ms"}, flag...)
		err := execute(t, f, NewCmdCalcMaxsize(f, func(*CalcMaxsizeOptions) error { t.Errorf("%v: ran", flag); return nil }), args...)
		wantUsage(t, err, flag[0]+" goes with --apply STREAM")
	}
}

// consume's flags, and the bad input of issue 29 refused before any server.
func TestConsumeOptions(t *testing.T) {
	var got *ConsumeOptions
	f := testFactory("")
	if err := execute(t, f, NewCmdConsume(f, func(o *ConsumeOptions) error { got = o; return nil }),
		"consume", "orders", "--group", "billing", "--workers", "2", "--lease", "2s", "--max-attempts", "5",
		"--retry-delay", "0s", "--dead-letter", "orders-dead", "--until-empty", "--count", "7", "--block", "50ms", "--", "sh", "-c", "exit 0"); err != nil {
		t.Fatal(err)
	}
	p := got.Params
	if p.Stream != "orders" || p.Group != "billing" || p.Workers != 2 || p.Lease != 2*time.Second || p.MaxAttempts != 5 ||
		p.RetryDelay != 0 || p.DeadLetter != "orders-dead" || !p.UntilEmpty || p.Count != 7 || p.Block != 50*time.Millisecond ||
		!slices.Equal(p.Command, []string{"sh", "-c", "exit 0"}) || !strings.Contains(p.Consumer, ":") || p.Create {
		t.Errorf("parsed %+v", p)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"s", "--group", "g", "--max-attempts", "0", "--", "true"}, "--max-attempts 0: give 1 or more"},
		{[]string{"s", "--group", "g", "--lease", "999ms", "--", "true"}, "--lease 999ms is too short"},
		{[]string{"s", "--group", "g", "--"}, "consume needs STREAM --group GROUP -- COMMAND"},
		{[]string{"s", "--group", "g", "true"}, "consume takes one STREAM, then -- COMMAND"},
		{[]string{"s", "--group", "g", "--dead-letter", "s", "--", "true"}, `--dead-letter "s" is the stream itself`},
		{[]string{"s", "--", "true"}, "--group is required"},
		{[]string{"s", "--group", "g", "--workers", "0", "--", "true"}, "--workers 0"},
		{[]string{"s", "--group", "g", "--retry-delay", "-1s", "--", "true"}, "--retry-delay"},
		{[]string{"s", "--group", "g", "--block", "0s", "--", "true"}, "--block 0s"},
		{[]string{"s", "--group", "g", "--", "./no-such-handler"}, `the handler "./no-such-handler" cannot be run`},
	} {
		wantUsage(t, execute(t, f, NewCmdConsume(f, func(*ConsumeOptions) error { t.Fatal("runF reached"); return nil }), append([]string{"consume"}, c.args...)...), c.want)
	}
}
