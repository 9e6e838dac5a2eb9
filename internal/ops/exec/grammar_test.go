package exec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
)

// Parse is what Session.Do makes of one command in emulated mode.
func Parse(args []string) Command {
	c := Command{Args: args, Op: OpPass}
	if len(args) > 0 {
		c.Name = strings.ToUpper(args[0])
		c.parse()
	}
	return c
}

func words(s string) []string {
	args, err := SplitLine(s)
	if err != nil {
		panic(err)
	}
	return args
}

// Redis 8.6.3's errors, in its order (its stream test suite's cases, and
// the order of streamParseAddOrTrimArgsOrReply: each option checked as
// read, then IDMP with an explicit ID, then LIMIT without a trimming
// strategy or without ~, then the fields). The texts are 8.6.3's
// (src/t_stream.c, src/config.c), checked against a real server by
// TestAgreementCases.
func TestParseErrors(t *testing.T) {
	cases := []struct{ cmd, err string }{
		{`XADD s`, "ERR wrong number of arguments for 'xadd' command"},
		{`XADD s *`, "ERR wrong number of arguments for 'xadd' command"},
		{`XADD s * f`, "ERR wrong number of arguments for 'xadd' command"},
		{`XADD s IDMP p1 i1 * f`, "ERR wrong number of arguments for 'xadd' command"},
		{`XADD s IDMP p1 i1 * f v g`, "ERR wrong number of arguments for 'xadd' command"},
		{`XADD s IDMP p1 i1`, "ERR wrong number of arguments for 'xadd' command"},
		{`XADD mystream IDMP p1 * f v`, "ERR Invalid stream ID specified as stream command argument"},
		{`XADD mystream IDMP p1 iid1 1-1 f v`, "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{`XADD mystream IDMP p1 iid1 1-* f v`, "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{`XADD mystream IDMPAUTO p1 1-1 f v`, "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{`XADD mystream IDMP p1 iid1 IDMP p2 iid2 * f v`, "ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{`XADD mystream IDMPAUTO p1 IDMP p2 iid2 * f v`, "ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{`XADD mystream IDMPAUTO p1 IDMPAUTO p2 * f v`, "ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{`XADD mystream IDMP p1 iid1 IDMPAUTO p2 * f v`, "ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{`XADD mystream IDMP "" iid1 * f v`, "ERR syntax error, IDMP requires a non-empty producer ID"},
		{`XADD mystream IDMP p1 "" * f v`, "ERR syntax error, IDMP requires a non-empty idempotent ID"},
		{`XADD mystream IDMPAUTO "" * f v`, "ERR syntax error, IDMPAUTO requires a non-empty producer ID"},
		{`XADD s IDMP p1 i1 IDMP "" i2 * f v`, "ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{`XADD s MAXLEN abc IDMP p i * f v`, "ERR value is not an integer or out of range"},
		{`XADD s IDMP p i MAXLEN -1 * f v`, "ERR The MAXLEN argument must be >= 0."},
		{`XADD s IDMP p i MAXLEN 1 MINID 5 * f v`, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"},
		{`XADD s IDMP p i MINID x * f v`, "ERR Invalid stream ID specified as stream command argument"},
		{`XADD s IDMP p i LIMIT -1 * f v`, "ERR The LIMIT argument must be >= 0."},
		{`XADD s IDMP p i MAXLEN 5 LIMIT 10 * f v`, "ERR syntax error, LIMIT cannot be used without the special ~ option"},
		{`XADD s IDMP p i LIMIT 10 * f v`, "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"},
		{`XADD s LIMIT 10 * f v`, "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"},
		{`XADD s IDMP p i LIMIT 0 * f v`, "ERR syntax error, LIMIT cannot be used without the special ~ option"},
		{`XADD s IDMP p i 1-1 MAXLEN 5 LIMIT 10 f v`, "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{`XADD s IDMP p i LIMIT 10 1-1 f v`, "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{`XADD s IDMP p i + f v`, "ERR Invalid stream ID specified as stream command argument"},
		// One deletion strategy: a second is read as the ID.
		{`XADD s IDMP p i KEEPREF KEEPREF * f v`, "ERR Invalid stream ID specified as stream command argument"},
		{`XADD s KEEPREF ACKED * f v`, "ERR Invalid stream ID specified as stream command argument"},
		{`XCFGSET`, "ERR wrong number of arguments for 'xcfgset' command"},
		{`CONFIG SET stream-idmp-duration 0`, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-duration') - argument must be between 1 and 86400 inclusive"},
		{`CONFIG SET stream-idmp-maxsize 10001`, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - argument must be between 1 and 10000 inclusive"},
		{`CONFIG SET stream-idmp-maxsize x`, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - argument couldn't be parsed into an integer"},
		{`CONFIG SET STREAM-IDMP-MAXSIZE x`, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - argument couldn't be parsed into an integer"},
		// Every name before any value; a repeat as typed (issue 22, root
		// cause 5).
		{`CONFIG SET stream-idmp-maxsize 5 stream-idmp-maxsize 6`, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - duplicate parameter"},
		{`CONFIG SET stream-idmp-maxsize x STREAM-IDMP-MAXSIZE 6`, "ERR CONFIG SET failed (possibly related to argument 'STREAM-IDMP-MAXSIZE') - duplicate parameter"},
		{`CONFIG SET stream-idmp-duration 0 stream-idmp-maxsize 5 Stream-Idmp-Maxsize 5`, "ERR CONFIG SET failed (possibly related to argument 'Stream-Idmp-Maxsize') - duplicate parameter"},
	}
	for _, c := range cases {
		got := Parse(words(c.cmd))
		if got.Op != OpError || got.Err != c.err {
			t.Errorf("%s: op %d %q, want %q", c.cmd, got.Op, got.Err, c.err)
		}
	}
}

// XCFGSET's argument errors, in Redis 8.6.3's order: each keyword in turn
// (a repeat before its value, the value an integer, then in range), none
// at all last. They are replied after the key's lookup (CfgErr).
func TestParseXCfgSetErrors(t *testing.T) {
	cases := []struct{ cmd, err string }{
		{`XCFGSET mystream`, "ERR At least one parameter must be specified"},
		{`XCFGSET mystream IDMP-DURATION`, "ERR syntax error"},
		{`XCFGSET mystream IDMP-MAXSIZE`, "ERR syntax error"},
		{`XCFGSET mystream INVALID`, "ERR syntax error"},
		{`XCFGSET mystream INVALID 5`, "ERR syntax error"},
		{`XCFGSET mystream IDMP-DURATION 5 IDMP-MAXSIZE`, "ERR syntax error"},
		{`XCFGSET mystream IDMP-DURATION IDMP-DURATION IDMP-DURATION`, "ERR value is not an integer or out of range"},
		{`XCFGSET mystream IDMP-MAXSIZE IDMP-MAXSIZE IDMP-MAXSIZE`, "ERR value is not an integer or out of range"},
		{`XCFGSET mystream IDMP-DURATION INVALID IDMP-MAXSIZE`, "ERR value is not an integer or out of range"},
		{`XCFGSET mystream IDMP-MAXSIZE INVALID IDMP-DURATION`, "ERR value is not an integer or out of range"},
		{`XCFGSET mystream IDMP-DURATION 0 IDMP-MAXSIZE A`, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{`XCFGSET mystream IDMP-DURATION 86401`, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{`XCFGSET mystream IDMP-DURATION -100`, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{`XCFGSET mystream IDMP-MAXSIZE 0`, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{`XCFGSET mystream IDMP-MAXSIZE 10001`, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		// A parameter given twice (issue 22, root cause 3): refused, even
		// with the same value, before its second value is read.
		{`XCFGSET mystream IDMP-DURATION 10 IDMP-DURATION 60`, "ERR IDMP-DURATION specified multiple times"},
		{`XCFGSET mystream IDMP-MAXSIZE 5 idmp-maxsize 5`, "ERR IDMP-MAXSIZE specified multiple times"},
		{`XCFGSET mystream IDMP-DURATION 10 IDMP-MAXSIZE 5 IDMP-DURATION x`, "ERR IDMP-DURATION specified multiple times"},
		{`XCFGSET mystream IDMP-DURATION 10 IDMP-DURATION`, "ERR syntax error"},
	}
	for _, v := range []string{"A", "AAA", "*", "-", "+", "120-5", "3.14", "000000000", "IDMP-DURATION", "007", "+5", "0100", `""`} {
		for _, k := range []string{"IDMP-DURATION", "IDMP-MAXSIZE"} {
			cases = append(cases, struct{ cmd, err string }{"XCFGSET mystream " + k + " " + v, "ERR value is not an integer or out of range"})
		}
	}
	for _, c := range cases {
		got := Parse(words(c.cmd))
		if got.Op != OpXCfgSet || got.CfgErr != c.err || got.Stream != "mystream" || got.Cfg != (idmp.Config{}) {
			t.Errorf("%s: op %d %q %q %+v, want XCFGSET of mystream refused with %q", c.cmd, got.Op, got.Err, got.CfgErr, got.Cfg, c.err)
		}
	}
}

// CONFIG GET's stream-idmp-* parameters as Redis 8.6.3 lists them (issue
// 22, root cause 6): a pattern without *, ? or [ names one in any case
// and shows it as typed; a glob shows its own name; the first pattern
// that matches a parameter decides.
func TestConfigMatches(t *testing.T) {
	cases := []struct {
		pats []string
		want []configMatch
	}{
		{[]string{"STREAM-IDMP-MAXSIZE"}, []configMatch{{ParamMaxSize, "STREAM-IDMP-MAXSIZE"}}},
		{[]string{"stream-idmp-*"}, []configMatch{{ParamDuration, ParamDuration}, {ParamMaxSize, ParamMaxSize}}},
		{[]string{"Stream-Idmp-Duration", "stream-idmp-*"}, []configMatch{{ParamDuration, "Stream-Idmp-Duration"}, {ParamMaxSize, ParamMaxSize}}},
		{[]string{"stream-idmp-*", "STREAM-IDMP-DURATION"}, []configMatch{{ParamDuration, ParamDuration}, {ParamMaxSize, ParamMaxSize}}},
		{[]string{"stream-idmp-maxsize", "STREAM-IDMP-MAXSIZE"}, []configMatch{{ParamMaxSize, ParamMaxSize}}},
		{[]string{`stream-idmp\-duration`}, nil}, // no wildcard: a name, which it is not
		{[]string{`stream-idmp\-d*`}, []configMatch{{ParamDuration, ParamDuration}}},
		{[]string{"maxclients", "*IDMP-MAX*"}, []configMatch{{ParamMaxSize, ParamMaxSize}}},
		{[]string{"stream-idmp"}, nil},
	}
	for _, c := range cases {
		if got := configMatches(c.pats); !reflect.DeepEqual(got, c.want) {
			t.Errorf("configMatches(%q) = %v, want %v", c.pats, got, c.want)
		}
	}
}

func TestParseXAdd(t *testing.T) {
	cases := []struct {
		cmd      string
		want     stream.AddRequest
		deletion string
	}{
		{`XADD s IDMP p1 i1 * f v`, stream.AddRequest{Stream: "s", PID: "p1", IID: "i1", ID: "*", Fields: []string{"f", "v"}}, ""},
		{`xadd s idmpauto p1 * f v g w`, stream.AddRequest{Stream: "s", PID: "p1", Auto: true, ID: "*", Fields: []string{"f", "v", "g", "w"}}, ""},
		{`XADD s NOMKSTREAM KEEPREF MAXLEN ~ 100 LIMIT 10 IDMP p1 i1 * f v`,
			stream.AddRequest{Stream: "s", PID: "p1", IID: "i1", ID: "*", NoMkStream: true, MaxLen: 100, Approx: true, Limit: 10, Fields: []string{"f", "v"}}, "KEEPREF"},
		{`XADD s MINID = 5-0 IDMP p1 i1 DELREF * f v`, stream.AddRequest{Stream: "s", PID: "p1", IID: "i1", ID: "*", MinID: "5-0", Fields: []string{"f", "v"}}, "DELREF"},
		{`XADD s IDMP p1 i1 MAXLEN 0 * f v`, stream.AddRequest{Stream: "s", PID: "p1", IID: "i1", ID: "*", MinID: maxStreamID, Fields: []string{"f", "v"}}, ""},
		{`XADD s MAXLEN ~ 5 LIMIT 0 IDMP p1 i1 * f v`, stream.AddRequest{Stream: "s", PID: "p1", IID: "i1", ID: "*", MaxLen: 5, Approx: true, Limit: -1, Fields: []string{"f", "v"}}, ""},
		// pids and iids that look like options or IDs (R1)
		{`XADD s IDMP IDMP * * * *`, stream.AddRequest{Stream: "s", PID: "IDMP", IID: "*", ID: "*", Fields: []string{"*", "*"}}, ""},
		{`XADD s IDMP - MAXLEN * f v`, stream.AddRequest{Stream: "s", PID: "-", IID: "MAXLEN", ID: "*", Fields: []string{"f", "v"}}, ""},
	}
	for _, c := range cases {
		got := Parse(words(c.cmd))
		if c.want.Deletion = c.deletion; got.Op != OpXAdd || !reflect.DeepEqual(got.Add, c.want) {
			t.Errorf("%s: op %d %q %+v, want %+v", c.cmd, got.Op, got.Err, got.Add, c.want)
		}
	}
	// XADDs without IDMP that parse are the server's.
	for _, cmd := range []string{`XADD s * f v`, `XADD s 1-1 f v`, `XADD s MAXLEN 5 * IDMP p`, `XADD s NOMKSTREAM * f v`} {
		if got := Parse(words(cmd)); got.Op != OpPass {
			t.Errorf("%s: op %d %q, want a pass", cmd, got.Op, got.Err)
		}
	}
}

func TestParseOthers(t *testing.T) {
	if c := Parse(words(`XCFGSET s IDMP-MAXSIZE 5 idmp-duration 60`)); c.Op != OpXCfgSet || c.Cfg != (idmp.Config{Duration: 60, MaxSize: 5}) || c.Stream != "s" || c.CfgErr != "" {
		t.Errorf("XCFGSET: %+v", c)
	}
	for cmd, op := range map[string]Op{
		`XINFO STREAM s`: OpXInfo, `xinfo stream s full`: OpXInfo, `XINFO STREAM s FULL COUNT 5`: OpXInfo,
		`XINFO STREAM s COUNT 5`: OpPass, `XINFO GROUPS s`: OpXInfoGroups, `XINFO GROUPS s x`: OpPass, `XINFO STREAM`: OpPass,
		`CONFIG GET maxclients`: OpConfigGet, `CONFIG GET`: OpPass, `CONFIG SET maxclients 5`: OpPass,
		`CONFIG SET stream-idmp-duration 5 maxclients 5`: OpError, `CONFIG SET stream-idmp-duration`: OpPass,
		`RENAME a b`: OpMove, `RENAME a`: OpPass, `COPY a b REPLACE DB 1`: OpMove, `COPY a b NOPE`: OpPass,
		`GET x`: OpPass, `SET k v`: OpPass,
	} {
		if c := Parse(words(cmd)); c.Op != op {
			t.Errorf("%s: op %d %q, want %d", cmd, c.Op, c.Err, op)
		}
	}
	if c := Parse(words(`CONFIG SET STREAM-IDMP-MAXSIZE 7 stream-idmp-duration 9`)); c.Op != OpConfigSet || c.ConfigSet != (idmp.Config{Duration: 9, MaxSize: 7}) {
		t.Errorf("CONFIG SET: %+v", c)
	}
}

func TestSplitLine(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   \t ", nil},
		{"SET k v", []string{"SET", "k", "v"}},
		{`SET "a b" 'c d'`, []string{"SET", "a b", "c d"}},
		{`SET "\x00\xff\n\r\t\a\b\"\\\q" x`, []string{"SET", "\x00\xff\n\r\t\a\b\"\\q", "x"}},
		{`SET 'it\'s' '\x41'`, []string{"SET", "it's", `\x41`}},
		{`a"b c"`, []string{"ab c"}},
		{`"" ''`, []string{"", ""}},
		{"SET k v\r\n", []string{"SET", "k", "v"}},
		{`"\x4"`, []string{`x4`}},
	}
	for _, c := range cases {
		got, err := SplitLine(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitLine(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`"abc`, `'abc`, `"a"b`, `'a'b`, `"\"`} {
		if got, err := SplitLine(bad); err != ErrInvalidArgs {
			t.Errorf("SplitLine(%q) = %q, %v; want Invalid argument(s)", bad, got, err)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"*", "stream-idmp-duration", true}, {"stream-idmp-*", "stream-idmp-maxsize", true},
		{"STREAM-IDMP-*", "stream-idmp-maxsize", true}, {"*idmp*", "stream-idmp-duration", true},
		{"stream-idmp-?uration", "stream-idmp-duration", true}, {"stream-idmp-[a-e]*", "stream-idmp-duration", true},
		{"stream-idmp-[^d]*", "stream-idmp-duration", false}, {"maxclients", "stream-idmp-maxsize", false},
		{`stream\-idmp-*`, "stream-idmp-maxsize", true}, {"stream-idmp", "stream-idmp-maxsize", false},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 40), false},
	} {
		if got := GlobMatch(c.p, c.s, true); got != c.want {
			t.Errorf("GlobMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

// FuzzParse: any line splits or is refused, and any arguments parse to one
// outcome without a panic; an XADD parsed as IDMP has a pid, exactly one of
// an iid or IDMPAUTO, and an even number (>= 2) of fields.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`XADD s IDMP p1 i1 * f v`, `XADD s NOMKSTREAM KEEPREF MAXLEN ~ 100 LIMIT 10 IDMPAUTO p1 * f v`,
		`XADD mystream IDMP p1 * f v`, `XADD s IDMP p i MINID = 1-* * f v`, `XCFGSET s IDMP-DURATION IDMP-DURATION IDMP-DURATION`,
		`XCFGSET s IDMP-MAXSIZE 5 IDMP-DURATION 9`, `CONFIG SET stream-idmp-maxsize 5`, `CONFIG GET stream-idmp-*`,
		`XINFO STREAM s FULL COUNT 2`, `COPY a b DB 1 REPLACE`, `"\x00\xff" '\''`, `a"b c"d`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args, err := SplitLine(line)
		if err != nil {
			return
		}
		c := Parse(args)
		if c.Op == OpXAdd {
			r := c.Add
			if r.PID == "" || r.Auto == (r.IID != "") || len(r.Fields) < 2 || len(r.Fields)%2 != 0 || r.ID != "*" {
				t.Fatalf("%q parsed to %+v", line, r)
			}
		}
		if c.Op == OpError && !strings.HasPrefix(c.Err, "ERR ") {
			t.Fatalf("%q: error %q has no ERR", line, c.Err)
		}
		if c.Op == OpXCfgSet && (c.CfgErr != "" && !strings.HasPrefix(c.CfgErr, "ERR ") || c.CfgErr == "" && c.Cfg == (idmp.Config{})) {
			t.Fatalf("%q: XCFGSET %q %+v", line, c.CfgErr, c.Cfg)
		}
	})
}
