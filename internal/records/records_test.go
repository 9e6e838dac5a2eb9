package records

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// now is the server time the fixtures are judged at: 2023-11-14T22:15:00Z.
const now = int64(1700000100000)

func str(s string) RawValue { return RawValue{String: &s, StringLen: int64(len(s))} }

func hash(kv ...string) RawValue {
	m := make(map[string]string)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return RawValue{Hash: m}
}

func boolp(b bool) *bool { return &b }

// want is the part of a Record a case checks; zero fields are not checked
// except Format, Status and Flags.
type want struct {
	format    Format
	status    Status
	raw       string
	owner     string
	token     int64
	attempts  int64
	created   int64
	updated   int64
	lease     int64
	deadline  int64
	expires   int64
	fp        string
	result    int // ResultBytes, -1 for HasResult false
	errText   string
	members   int64
	flags     []Flag
	truncated bool
}

func TestDecode(t *testing.T) {
	cases := []struct {
		name, key, typ string
		val            RawValue
		ttl            int64
		want           want
	}{
		// idmpctl's own record (docs/claim.md).
		{"idmpctl live", "idem:order-17", "hash", hash("status", "PROCESSING", "owner", "web-1:4242", "token", "3",
			"attempts", "3", "lease_until", "1700000160000", "created", "1699999990000", "updated", "1700000099000",
			"fingerprint", "9f86d081884c7d65"), 86400000,
			want{format: FormatIdmpctl, status: Processing, raw: "PROCESSING", owner: "web-1:4242", token: 3, attempts: 3,
				lease: 1700000160000, created: 1699999990000, updated: 1700000099000, fp: "9f86d081884c7d65", result: -1}},
		{"idmpctl stale", "idem:order-18", "hash", hash("status", "PROCESSING", "owner", "web-2:1", "token", "1",
			"attempts", "1", "lease_until", "1700000099999", "created", "1700000000000", "updated", "1700000000000"), 86400000,
			want{format: FormatIdmpctl, status: Processing, raw: "PROCESSING", owner: "web-2:1", token: 1, attempts: 1,
				lease: 1700000099999, created: 1700000000000, updated: 1700000000000, result: -1, flags: []Flag{FlagStale}}},
		{"idmpctl completed", "idem:order-19", "hash", hash("status", "COMPLETED", "owner", "w", "token", "2",
			"attempts", "2", "lease_until", "1", "created", "5", "updated", "6", "result", "hello"), -1,
			want{format: FormatIdmpctl, status: Completed, raw: "COMPLETED", owner: "w", token: 2, attempts: 2, lease: 1,
				created: 5, updated: 6, result: 5, flags: []Flag{FlagNoTTL}}},
		{"idmpctl failed", "idem:order-20", "hash", hash("status", "FAILED", "token", "1", "error", "exit status 3"), 1000,
			want{format: FormatIdmpctl, status: Failed, raw: "FAILED", token: 1, attempts: 1, result: -1, errText: "exit status 3"}},
		{"idmpctl junk numbers", "idem:x", "hash", hash("status", "PROCESSING", "token", "x", "lease_until", "1.5e3"), 1000,
			want{format: FormatIdmpctl, status: Processing, raw: "PROCESSING", result: -1}},

		// Other hashes with status or state.
		{"hash state", "jobs:1", "hash", hash("state", "STARTED", "worker", "w-1", "started_at", "1700000000"), 5000,
			want{format: FormatHash, status: Processing, raw: "STARTED", owner: "w-1", created: 1700000000000, result: -1}},
		{"hash Status any case", "jobs:2", "hash", hash("Status", "done", "updatedAt", "2023-11-14T22:13:20Z", "response", "{}"), 5000,
			want{format: FormatHash, status: Completed, raw: "done", updated: 1700000000000, result: 2}},
		{"hash stale by lock time", "jobs:3", "hash", hash("status", "running", "locked_until", "1700000000000"), 5000,
			want{format: FormatHash, status: Processing, raw: "running", lease: 1700000000000, result: -1, flags: []Flag{FlagStale}}},
		{"hash no status", "user:1", "hash", hash("name", "ada"), -1,
			want{format: FormatUnknown, status: Unknown, result: -1, flags: []Flag{FlagNoTTL}}},
		{"hash partial", "big", "hash", RawValue{Hash: map[string]string{"status": "ERROR"}, HashPartial: true}, 5,
			want{format: FormatHash, status: Failed, raw: "ERROR", result: -1, truncated: true}},

		// JSON strings.
		{"json status", "idem:c-1", "string", str(`{"status":"PROCESSING","owner":"c-1","timestamp":1700000000123}`), 60000,
			want{format: FormatJSON, status: Processing, raw: "PROCESSING", owner: "c-1", created: 1700000000123, result: -1}},
		{"json state", "idem:c-2", "string", str(`{"state":"STARTED"}`), 60000,
			want{format: FormatJSON, status: Processing, raw: "STARTED", result: -1}},
		{"json strings and floats", "idem:c-3", "string",
			str(`{"status":"SUCCEEDED","attempts":"2","token":3.0,"created":"1700000000.5","result":{"id":7}}`), 60000,
			want{format: FormatJSON, status: Completed, raw: "SUCCEEDED", attempts: 2, token: 3, created: 1700000000500, result: 8}},
		{"json deadline past", "idem:c-4", "string", str(` {"status":"in-progress","deadline":1700000000} `), 60000,
			want{format: FormatJSON, status: Processing, raw: "in-progress", deadline: 1700000000000, result: -1, flags: []Flag{FlagStale}}},
		{"json nested status", "idem:c-5", "string", str(`{"status":{"code":"DONE"},"error":null}`), 60000,
			want{format: FormatJSON, status: Unknown, raw: `{"code":"DONE"}`, result: -1}},
		{"json failure", "idem:c-6", "string", str(`{"status":"failure","reason":"timeout","ts":1700000000000000}`), 60000,
			want{format: FormatJSON, status: Failed, raw: "failure", created: 1700000000000, errText: "timeout", result: -1}},
		{"json without status", "cfg", "string", str(`{"a":1}`), -1,
			want{format: FormatUnknown, status: Unknown, result: -1, flags: []Flag{FlagNoTTL}}},
		{"json malformed", "idem:c-7", "string", str(`{"status":"PROCESSING"`), 60000,
			want{format: FormatUnknown, status: Unknown, result: -1}},
		{"json truncated read", "idem:big", "string", RawValue{String: strp(`{"status":"PROC`), StringLen: 5 << 20}, 60000,
			want{format: FormatUnknown, status: Unknown, result: -1, truncated: true}},

		// AWS Powertools.
		{"powertools in progress, stale", "fn.handler#5eff007a9ed2789a9f9f6bc182fc6ae6", "string",
			str(`{"id":"fn.handler#5eff007a9ed2789a9f9f6bc182fc6ae6","expiration":1700003600,"in_progress_expiration":1700000000123,"status":"INPROGRESS","validation":"a1b2"}`), 3500000,
			want{format: FormatPowertools, status: Processing, raw: "INPROGRESS", expires: 1700003600000, deadline: 1700000000123,
				fp: "a1b2", result: -1, flags: []Flag{FlagStale}}},
		{"powertools in progress, live", "fn#1", "string",
			str(`{"status": "INPROGRESS", "expiration": 1700003600, "in_progress_expiration": 1700000160000}`), 3500000,
			want{format: FormatPowertools, status: Processing, raw: "INPROGRESS", expires: 1700003600000, deadline: 1700000160000, result: -1}},
		{"powertools completed", "fn#2", "string",
			str(`{"data": "{\"statusCode\": 200}", "status": "COMPLETED", "expiration": 1700003600}`), 3500000,
			want{format: FormatPowertools, status: Completed, raw: "COMPLETED", expires: 1700003600000, result: 19}},
		{"powertools past expiration", "fn#3", "string",
			str(`{"data":"x","status":"COMPLETED","expiration":1699999999}`), 1000,
			want{format: FormatPowertools, status: Expired, raw: "COMPLETED", expires: 1699999999000, result: 1, flags: []Flag{FlagExpired}}},
		{"powertools float expiration", "fn#4", "string",
			str(`{"status":"INPROGRESS","expiration":1700003600.0,"in_progress_expiration":"1700000160000"}`), 1000,
			want{format: FormatPowertools, status: Processing, raw: "INPROGRESS", expires: 1700003600000, deadline: 1700000160000, result: -1}},
		{"powertools lock orphan", "fn#5:lock", "string", RawValue{String: strp("True"), StringLen: 4, LockTargetExists: boolp(false)}, 9000,
			want{format: FormatPowertoolsLock, status: Locked, raw: "True", result: -1, flags: []Flag{FlagOrphanLock}}},
		{"powertools lock held", "fn#6:lock", "string", RawValue{String: strp("true"), StringLen: 4, LockTargetExists: boolp(true)}, 9000,
			want{format: FormatPowertoolsLock, status: Locked, raw: "true", result: -1}},
		{"other lock, token with a short TTL", "job:lock", "string", str("7c1e-4f2a-token"), 9000,
			want{format: FormatLock, status: Locked, owner: "7c1e-4f2a-token", result: -1}},

		// Plain markers.
		{"marker processing", "seen:a", "string", str("PROCESSING"), 60000,
			want{format: FormatMarker, status: Processing, raw: "PROCESSING", result: -1}},
		{"marker completed", "seen:b", "string", str("COMPLETED"), 60000,
			want{format: FormatMarker, status: Completed, raw: "COMPLETED", result: -1}},
		{"marker one", "seen:c", "string", str("1"), -1,
			want{format: FormatMarker, status: Completed, raw: "1", result: -1, flags: []Flag{FlagNoTTL}}},
		{"marker quoted", "seen:d", "string", str(`"DONE"`), 60000,
			want{format: FormatMarker, status: Completed, raw: `"DONE"`, result: -1}},
		{"marker error", "seen:e", "string", str("error"), 60000,
			want{format: FormatMarker, status: Failed, raw: "error", result: -1}},
		{"not a marker", "greeting", "string", str("hello world"), 60000,
			want{format: FormatUnknown, status: Unknown, result: -1}},

		// Apache Camel.
		{"camel string", "orders-repo:order-17", "string", str("order-17"), -1,
			want{format: FormatCamel, status: Completed, result: -1, flags: []Flag{FlagNoTTL}}},
		{"camel id with colon", "repo:a:b", "string", str("a:b"), 1000,
			want{format: FormatCamel, status: Completed, result: -1}},
		{"camel set", "orders-repo", "set", RawValue{SetCard: 42}, -1,
			want{format: FormatCamel, status: Completed, raw: "set", members: 42, result: -1, flags: []Flag{FlagNoTTL}}},

		// Other types.
		{"stream", "events", "stream", RawValue{}, -1,
			want{format: FormatStream, status: "", result: -1, flags: []Flag{FlagNoTTL}}},
		{"list", "q", "list", RawValue{}, 10,
			want{format: FormatUnknown, status: Unknown, result: -1}},
		{"missing", "gone", "none", RawValue{}, -2,
			want{format: FormatNone, status: Absent, result: -1}},
		{"string without value", "s", "string", RawValue{}, 10,
			want{format: FormatUnknown, status: Unknown, result: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Decode(tc.key, tc.typ, tc.val, tc.ttl, now)
			w := tc.want
			got := want{format: r.Format, status: r.Status, raw: r.RawStatus, owner: r.Owner, token: r.Token,
				attempts: r.Attempts, created: r.CreatedMs, updated: r.UpdatedMs, lease: r.LeaseUntilMs,
				deadline: r.DeadlineMs, expires: r.ExpiresMs, fp: r.Fingerprint, result: r.ResultBytes,
				errText: r.Error, members: r.Members, flags: r.Flags, truncated: r.Truncated}
			if !r.HasResult {
				got.result = -1
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("Decode(%q)\n got %+v\nwant %+v", tc.key, got, w)
			}
			if r.Key != tc.key || (tc.typ != "none" && r.Type != tc.typ) || (tc.typ != "none" && r.TTLms != tc.ttl) {
				t.Errorf("key/type/ttl = %q/%q/%d", r.Key, r.Type, r.TTLms)
			}
		})
	}
}

func strp(s string) *string { return &s }

func TestDecodeKeepsRawFields(t *testing.T) {
	r := Decode("k", "string", str(`{"status":"DONE","n":1.50,"o":{"a":[1,2]},"s":"x\u00e9"}`), 1, now)
	want := map[string]string{"status": "DONE", "n": "1.50", "o": `{"a":[1,2]}`, "s": "xé"}
	if !reflect.DeepEqual(r.Fields, want) {
		t.Errorf("Fields = %v, want %v", r.Fields, want)
	}
}

func TestDecodeWithoutClockJudgesNothing(t *testing.T) {
	r := Decode("fn#3", "string", str(`{"status":"INPROGRESS","expiration":1,"in_progress_expiration":1}`), 5, 0)
	if r.Status != Processing || len(r.Flags) != 0 {
		t.Errorf("status %s flags %v, want PROCESSING and no flags", r.Status, r.Flags)
	}
}

func TestRecognised(t *testing.T) {
	for _, tc := range []struct {
		r    Record
		want bool
	}{
		{Record{Format: FormatIdmpctl, Type: "hash"}, true},
		{Record{Format: FormatMarker, Type: "string"}, true},
		{Record{Format: FormatPowertoolsLock, Type: "string"}, true},
		{Record{Format: FormatLock, Type: "string"}, true},
		{Record{Format: FormatCamel, Type: "string"}, true},
		{Record{Format: FormatCamel, Type: "set"}, false},
		{Record{Format: FormatStream, Type: "stream"}, false},
		{Record{Format: FormatUnknown, Type: "string"}, false},
		{Record{Format: FormatNone, Type: "none"}, false},
	} {
		if got := tc.r.Recognised(); got != tc.want {
			t.Errorf("%s/%s: Recognised() = %v", tc.r.Format, tc.r.Type, got)
		}
	}
}

func TestNormaliseStatus(t *testing.T) {
	for raw, want := range map[string]Status{
		"PROCESSING": Processing, "started": Processing, "INPROGRESS": Processing, "In Progress": Processing,
		"in_progress": Processing, "RUNNING": Processing, "pending": Processing,
		"DONE": Completed, "success": Completed, "Succeeded": Completed, "COMPLETE": Completed, "completed ": Completed,
		"ERROR": Failed, "failure": Failed, "FAILED": Failed, "expired": Expired,
		"": Unknown, "maybe": Unknown, strings.Repeat("DONE", 20): Unknown,
	} {
		if got := NormaliseStatus(raw); got != want {
			t.Errorf("NormaliseStatus(%q) = %s, want %s", raw, got, want)
		}
	}
}

// Every synonym listed (what --status's help and completion offer) parses
// as its status, and every word ParseStatus knows is listed.
func TestSynonyms(t *testing.T) {
	listed := 0
	for _, st := range Selectable() {
		for _, w := range append(Synonyms(st), string(st)) {
			listed++
			if got, ok := ParseStatus(w); !ok || got != st {
				t.Errorf("ParseStatus(%q) = %s, %v; listed under %s", w, got, ok, st)
			}
		}
	}
	// statusWords less LOCKED (a lock key as --status), plus LOCKED and UNKNOWN.
	if want := len(statusWords) - 1 + 2; listed != want {
		t.Errorf("%d names listed, want %d", listed, want)
	}
	if got := strings.Join(Synonyms(Completed), ","); got != "COMPLETE,DONE,FINISHED,PROCESSED,SUCCEEDED,SUCCESS,SUCCESSFUL" {
		t.Errorf("Synonyms(COMPLETED) = %s", got)
	}
}

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]Status{"completed": Completed, "PROCESSING": Processing, "unknown": Unknown,
		"absent": Absent, "inprogress": Processing, "expired": Expired, "locked": Locked, " LOCKED": Locked} {
		if got, ok := ParseStatus(in); !ok || got != want {
			t.Errorf("ParseStatus(%q) = %s, %v", in, got, ok)
		}
	}
	if _, ok := ParseStatus("bogus"); ok {
		t.Error("ParseStatus(bogus) accepted")
	}
}

func TestTimestampMs(t *testing.T) {
	for in, want := range map[string]int64{
		"1700000000":           1700000000000,
		"1700000000.25":        1700000000250,
		"1700000000123":        1700000000123,
		"1700000000123456":     1700000000123,
		"1700000000123456789":  1700000000123,
		"2023-11-14T22:13:20Z": 1700000000000,
		`"1700000000"`:         1700000000000,
		"0":                    0,
		"-5":                   0,
		"NaN":                  0,
		"1e400":                0,
		"soon":                 0,
		"99999999999999999999": 0,
	} {
		if got := timestampMs(in); got != want {
			t.Errorf("timestampMs(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestDecodedFieldsCoverIdmpctl(t *testing.T) {
	have := map[string]bool{}
	for _, f := range DecodedFields() {
		if have[f] {
			t.Errorf("duplicate %q", f)
		}
		have[f] = true
	}
	for _, f := range []string{"status", "state", "owner", "token", "attempts", "lease_until", "created", "updated",
		"fingerprint", "error", "expiration"} {
		if !have[f] {
			t.Errorf("DecodedFields lacks %q", f)
		}
	}
	for _, f := range PayloadFields() {
		if have[f] {
			t.Errorf("payload %q among DecodedFields", f)
		}
	}
}

func TestDecodeHashPayloadLengths(t *testing.T) {
	v := hash("status", "COMPLETED", "token", "4")
	v.HashPartial, v.HashLens = true, map[string]int64{"result": 2048, "data": 0}
	r := Decode("idem:big", "hash", v, 1000, now)
	if r.Format != FormatIdmpctl || !r.HasResult || r.ResultBytes != 2048 || !r.Truncated {
		t.Errorf("idmpctl: %+v", r)
	}
	v = hash("state", "DONE")
	v.HashLens = map[string]int64{"result": 0, "response": 9}
	if r := Decode("jobs:9", "hash", v, 1000, now); !r.HasResult || r.ResultBytes != 9 {
		t.Errorf("hash: %+v", r)
	}
}

func TestDecodeIDMPState(t *testing.T) {
	for key, typ := range map[string]string{
		"{orders}:idmp": "hash", "{orders}:idmp:pids": "set", "{orders}:idmp:ids:api-1": "hash",
		"{orders}:idmp:order:api-1": "list", "{o}.s:idmp": "hash", "{orders}:idmp:ids:p:idmp": "hash",
	} {
		if r := Decode(key, typ, RawValue{Hash: map[string]string{"status": "x"}}, -1, 1); r.Format != FormatIDMPState || r.Recognised() {
			t.Errorf("%s (%s): format %s, recognised %v", key, typ, r.Format, r.Recognised())
		}
	}
	for key, typ := range map[string]string{"orders:idmp": "hash", "{orders}:idmp": "string", "{}:idmp": "hash"} {
		if r := Decode(key, typ, RawValue{}, -1, 1); r.Format == FormatIDMPState {
			t.Errorf("%s (%s) taken for IDMP state", key, typ)
		}
	}
}

// TestLeaseOneRule: lease-left and stale follow one instant, the earlier of
// lease and deadline. The regression: a lease an hour ahead beside a passed
// deadline showed +59 min lease-left next to the stale flag.
func TestLeaseOneRule(t *testing.T) {
	const minute = int64(60000)
	for _, tc := range []struct {
		name            string
		lease, deadline int64
		status          Status
		left            int64
		known, stale    bool
	}{
		{"lease ahead, deadline passed", now + 59*minute, now - 1000, Processing, -1000, true, true},
		{"deadline ahead, lease passed", now - minute, now + 59*minute, Processing, -minute, true, true},
		{"both ahead", now + 2*minute, now + minute, Processing, minute, true, false},
		{"lease only", now + minute, 0, Processing, minute, true, false},
		{"deadline only, passed", 0, now - 1, Processing, -1, true, true},
		{"exactly now", now, 0, Processing, 0, true, true},
		{"neither", 0, 0, Processing, 0, false, false},
		{"completed", now - minute, now - minute, Completed, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"status": string(tc.status), "token": "1"}
			if tc.lease != 0 {
				h["lease_until"] = strconv.FormatInt(tc.lease, 10)
			}
			r := Decode("idem:k", "hash", RawValue{Hash: h}, 1000, now)
			r.DeadlineMs = tc.deadline // idmpctl's hash has no deadline; set it as Powertools would
			r.Flags = nil
			judge(&r, now)
			left, known := r.LeaseLeftMs()
			if left != tc.left || known != tc.known || r.HasFlag(FlagStale) != tc.stale {
				t.Errorf("lease-left %d (known %v), stale %v; want %d (%v), %v", left, known, r.HasFlag(FlagStale), tc.left, tc.known, tc.stale)
			}
			if known && left > 0 && r.HasFlag(FlagStale) {
				t.Error("positive lease-left beside stale")
			}
		})
	}
	// The same through a Powertools record: in_progress_expiration passed.
	r := Decode("fn#1", "string", str(`{"status":"INPROGRESS","expiration":1700003600,"in_progress_expiration":1700000000000}`), 1000, now)
	if left, known := r.LeaseLeftMs(); !known || left != -100000 || !r.HasFlag(FlagStale) {
		t.Errorf("powertools: lease-left %d (%v), flags %v", left, known, r.Flags)
	}
}

func TestAgeMs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     Record
		ms    int64
		known bool
	}{
		{"updated wins", Record{CreatedMs: now - 5000, UpdatedMs: now - 1000, NowMs: now}, 1000, true},
		{"created only", Record{CreatedMs: now - 5000, NowMs: now}, 5000, true},
		{"no time", Record{NowMs: now}, 0, false},
		{"no clock", Record{CreatedMs: now}, 0, false},
		{"client clock ahead", Record{CreatedMs: now + 2000, NowMs: now}, -2000, true},
		{"negative created", Record{CreatedMs: -5, NowMs: now}, 0, false},
	} {
		if ms, known := tc.r.AgeMs(); ms != tc.ms || known != tc.known {
			t.Errorf("%s: AgeMs() = %d, %v; want %d, %v", tc.name, ms, known, tc.ms, tc.known)
		}
	}
	// A Powertools record carries no write time: its age is unknown.
	r := Decode("fn#2", "string", str(`{"status":"COMPLETED","expiration":1700003600,"data":"{}"}`), 1000, now)
	if _, known := r.AgeMs(); known {
		t.Error("powertools record has a known age")
	}
}

// One decoder for docs/claim.md's record: inspect and the claim replies agree,
// also on a record written before attempts existed.
func TestClaimFieldsOneRule(t *testing.T) {
	h := map[string]string{"status": "PROCESSING", "owner": "w", "token": "3", "lease_until": "1700000000000",
		"created": "1", "updated": "2", "result": ""}
	c := ParseClaimFields(h)
	if c.Attempts != 3 || c.Token != 3 || !c.HasResult || c.LeaseUntil != 1700000000000 {
		t.Errorf("ParseClaimFields = %+v", c)
	}
	r := Decode("k", "hash", RawValue{Hash: h}, -1, 1)
	if r.Format != FormatIdmpctl || r.Attempts != c.Attempts || r.Token != c.Token || !r.HasResult {
		t.Errorf("Decode = %+v, want the attempts ParseClaimFields gives (%d)", r, c.Attempts)
	}
}
