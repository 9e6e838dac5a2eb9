package e2e

// Least privilege: docs/roles.md's role table, tested as it stands. Each
// role's ACL SETUSER rule is read from that page and set on a real server; the
// role's commands then run as that user, and one command of another role
// fails with 77 and writes nothing.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// readmeRoles reads the role table of docs/roles.md: role -> the rule's
// arguments after "ACL SETUSER". With native, each rule gets the page's
// additions for Redis 8.6 (commands older servers refuse to name).
func readmeRoles(t *testing.T, native bool) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(rolesDoc)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (monitor|producer|worker|operator) \\|.*\\| `ACL SETUSER (.+)` \\|$")
	roles := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		rule := strings.ReplaceAll(m[2], `\|`, "|") // a | escaped for the table
		roles[m[1]] = strings.Fields(rule)
	}
	if len(roles) != 4 {
		t.Fatalf("%s role table: %d roles, want monitor, producer, worker, operator", rolesDoc, len(roles))
	}
	// The table of additions: two cells, | role | `+cmd ...` |.
	extra := regexp.MustCompile("(?m)^\\| (monitor|producer|worker|operator) \\| `([^`]+)` \\|$")
	found := 0
	for _, m := range extra.FindAllStringSubmatch(string(b), -1) {
		found++
		if native {
			roles[m[1]] = append(roles[m[1]], strings.Fields(strings.ReplaceAll(m[2], `\|`, "|"))...)
		}
	}
	if found == 0 {
		t.Fatalf("%s: no table of role additions for Redis 8.6 (| role | `+command ...` |)", rolesDoc)
	}
	return roles
}

// keyspaceDigest is a digest of every key: name, DUMP payload, and whether
// it has a TTL. Equal digests: nothing was written.
func keyspaceDigest(t *testing.T, rc *redis.Client) string {
	t.Helper()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		d, err := rc.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl := rc.PTTL(ctx, k).Val()
		h.Write([]byte(strconv.Quote(k) + strconv.Quote(d) + strconv.FormatBool(ttl > 0)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// setUser sends ACL SETUSER name with the rule's arguments after the user
// name, the password put in.
func setUser(t *testing.T, srv *redistest.Server, name string, rule []string, password string) {
	t.Helper()
	args := []string{"ACL", "SETUSER", name}
	for _, a := range rule[1:] {
		if a == ">PASSWORD" {
			a = ">" + password
		}
		args = append(args, a)
	}
	if reply, err := srv.Do(args...); err != nil || reply != "OK" {
		t.Fatalf("%v: %s %v", args, reply, err)
	}
}

// narrowedRule is rule with its ~* replaced by patterns.
func narrowedRule(rule []string, patterns ...string) []string {
	var out []string
	for _, a := range rule {
		if a == "~*" {
			out = append(out, patterns...)
			continue
		}
		out = append(out, a)
	}
	return out
}

// TestRoles runs every role in both IDMP modes: emulated on the server
// under test (--mode emulated, which also works on Redis 8.6), and native
// in auto mode on a Redis 8.6 server (the server under test when it is
// one, else the 8.6.3 build beside it). On 8.6 the rules get the README's
// additions for it.
func TestRoles(t *testing.T) {
	for _, mode := range []string{"emulated", "native"} {
		t.Run(mode, func(t *testing.T) { testRoles(t, mode) })
	}
}

func testRoles(t *testing.T, mode string) {
	var opts redistest.Options
	if mode == "native" {
		opts.Binary = redistest.RequireNative(t)
	}
	srv := redistest.NewWith(t, opts)
	// nativeServer: the server has IDMP (an emulated run on Redis 8.6).
	nativeServer := mode == "native" || redistest.AtLeast(8, 6) && !redistest.IsValkey()
	roles := readmeRoles(t, nativeServer)
	for role, rule := range roles {
		if rule[0] != "idmp-"+role {
			t.Fatalf("%s: the rule names user %q", role, rule[0])
		}
		setUser(t, srv, rule[0], rule, role+"-pw")
	}
	// m is the stream commands' mode flag: emulated is asked for; native
	// is what auto mode picks on Redis 8.6.
	var m []string
	if mode == "emulated" {
		m = []string{"--mode", "emulated"}
	}
	with := func(args ...string) []string { return append(args, m...) }
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rc.Close() })
	admin := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	// as is the CLI of a role's user. The server's script cache is emptied
	// first: each role loads the scripts it runs itself (EVAL, SCRIPT LOAD),
	// as after a restart.
	as := func(t *testing.T, role string) *clitest.CLI {
		if reply, err := srv.Do("SCRIPT", "FLUSH"); err != nil || reply != "OK" {
			t.Fatalf("SCRIPT FLUSH: %s %v", reply, err)
		}
		return clitest.New(t, "IDMPCTL_URL=redis://idmp-"+role+"@"+srv.Addr+"/0", "IDMPCTL_PASSWORD="+role+"-pw")
	}
	// deniedWritesNothing runs a command of another role: 77, the server's
	// NOPERM kept, and the keyspace exactly as before.
	deniedWritesNothing := func(t *testing.T, cli *clitest.CLI, args ...string) {
		t.Helper()
		before := keyspaceDigest(t, rc)
		r := cli.Run(args...)
		if r.Code != 77 || !regexp.MustCompile(`NOPERM|ACL failure in script|The user executing the script can't`).MatchString(r.Stderr) {
			t.Errorf("%v: want 77 with the server's NOPERM, got %s", args, r)
		}
		if after := keyspaceDigest(t, rc); after != before {
			t.Errorf("%v: the keyspace changed although it was refused", args)
		}
	}

	// State every role works on: a stream written in the mode, claim records.
	admin.Expect(0, with("xadd", "orders", "--pid", "api-1", "--iid", "o-1", "amount", "100")...)
	admin.Expect(0, with("xadd", "orders", "--pid", "api-2", "--iid", "o-2", "amount", "5")...)
	for i := range 5 {
		admin.Expect(0, "claim", "acquire", "idem:"+strconv.Itoa(i))
	}
	tok := strings.TrimSpace(admin.Expect(0, "claim", "acquire", "idem:failed").Stdout)
	admin.Expect(0, "claim", "fail", "idem:failed", "--token", tok, "--error", "boom")

	t.Run("monitor", func(t *testing.T) {
		mon := as(t, "monitor")
		r := mon.Expect(0, "inspect", "orders")
		// What inspect (auto mode) shows: the emulated state, read with
		// plain commands (no scripting); on Redis 8.6 the native view
		// (XINFO STREAM: one atomic read), which names emulated state
		// beside it.
		wants := []string{"mode\temulated\n", "pids-tracked\t2\n", "iids-tracked\t2\n", "lint\tnot-atomic\tread with plain commands"}
		atomic := 0.0
		switch {
		case mode == "native":
			wants, atomic = []string{"mode\tnative\n", "pids-tracked\t2\n", "iids-tracked\t2\n"}, 1
		case nativeServer:
			wants, atomic = []string{"mode\tnative\n", "iids-tracked\t0\n", "lint\tmixed-modes\tthis stream still holds emulated IDMP state"}, 1
		}
		for _, want := range wants {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("inspect orders lacks %q:\n%s", want, r)
			}
		}
		if nativeServer && strings.Contains(r.Stdout, "not-atomic") {
			t.Errorf("inspect orders: the native view is one read:\n%s", r)
		}
		if r := mon.Expect(0, "inspect", "orders", "-o", "json"); strings.Contains(r.Stdout, `"not_atomic":true`) != (atomic == 0) {
			t.Errorf("json:\n%s", r)
		}
		fams := parsePrometheus(t, mon.Expect(0, "inspect", "orders", "-o", "prometheus").Stdout)
		wantTracked := 2.0
		if mode == "emulated" && nativeServer {
			wantTracked = 0 // native counters of a stream written emulated
		}
		if got := sampleValue(t, fams, "idmpctl_stream_iids_tracked", map[string]string{"stream": "orders"}); got != wantTracked {
			t.Errorf("iids_tracked %v, want %v", got, wantTracked)
		}
		// idmpctl_stream_read_atomic is only in documents where a stream
		// was read with plain commands.
		if _, ok := fams["idmpctl_stream_read_atomic"]; ok == (atomic == 1) {
			t.Errorf("idmpctl_stream_read_atomic present: %v, want %v", ok, atomic == 0)
		} else if ok {
			if got := sampleValue(t, fams, "idmpctl_stream_read_atomic", map[string]string{"stream": "orders"}); got != atomic {
				t.Errorf("read_atomic %v, want %v", got, atomic)
			}
		}
		mon.Expect(0, "inspect", "orders", "--watch", "10ms", "--count", "2")
		mon.Expect(0, "inspect", "idem:1", "idem:failed")
		mon.Expect(0, "inspect", "--server")
		r = mon.Expect(0, "inspect", "--match", "idem:*", "--memory")
		if !strings.Contains(r.Stderr, "matched 6: PROCESSING 5, FAILED 1") || !strings.Contains(r.Stderr, "memory: ") {
			t.Errorf("scan:\n%s", r)
		}
		fams = parsePrometheus(t, mon.Expect(0, "inspect", "--match", "idem:*", "-o", "prometheus").Stdout)
		if got := sampleValue(t, fams, "idmpctl_scan_records_matched", map[string]string{"pattern": "idem:*"}); got != 6 {
			t.Errorf("records_matched %v", got)
		}
		mon.Expect(0, "calc-ttl", "--rate", "100/s", "--ttl", "24h", "--sample", "idem:*")
		mon.Expect(0, "purge", "--match", "idem:*", "--dry-run")
		deniedWritesNothing(t, mon, "claim", "acquire", "idem:new")
		deniedWritesNothing(t, mon, with("xadd", "orders", "--pid", "api-1", "--iid", "o-9", "amount", "1")...)
	})

	t.Run("producer", func(t *testing.T) {
		prod := as(t, "producer")
		prod.Expect(0, with("xadd", "orders", "--pid", "api-1", "--iid", "o-3", "amount", "7")...)
		if r := prod.Expect(0, with("xadd", "orders", "--pid", "api-1", "--iid", "o-3", "amount", "7", "-o", "json")...); !strings.Contains(r.Stdout, `"duplicate":true`) || !strings.Contains(r.Stdout, `"mode":"`+mode+`"`) {
			t.Errorf("a retry is not a duplicate:\n%s", r)
		}
		prod.Expect(0, with("xadd", "orders", "--pid", "api-1", "--auto", "amount", "8")...)
		batch := filepath.Join(prod.Dir, "batch.ndjson")
		var lines []string
		for i := range 30 {
			lines = append(lines, `{"iid":"b-`+strconv.Itoa(i)+`","fields":{"n":"`+strconv.Itoa(i)+`"}}`)
		}
		if err := os.WriteFile(batch, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := prod.Expect(0, with("xadd", "orders", "--pid", "batcher", "--batch", batch)...)
		if n := strings.Count(r.Stdout, "\tadded\n"); n != 30 || !strings.Contains(r.Stderr, "("+mode+")") {
			t.Errorf("batch added %d of 30:\n%s", n, r)
		}
		if r := prod.Expect(0, with("xadd", "orders", "--pid", "batcher", "--batch", batch)...); strings.Count(r.Stdout, "\tadded\n") != 0 {
			t.Errorf("the batch again added lines:\n%s", r)
		}
		deniedWritesNothing(t, prod, "purge", "--match", "idem:*", "--status", "FAILED", "--yes")
		if mode == "native" && nativeServer {
			// A stream that holds emulated state: the single add's check lets
			// go of its WATCH with what the role has (UNWATCH; it has no
			// DISCARD), and the guard script knows the iid.
			admin.Expect(0, "xadd", "mixed", "--pid", "api-1", "--iid", "m-1", "--mode", "emulated", "amount", "1")
			if r := prod.Expect(0, "xadd", "mixed", "--pid", "api-1", "--iid", "m-1", "amount", "1", "-o", "json"); !strings.Contains(r.Stdout, `"duplicate":true`) {
				t.Errorf("a retry to a stream with emulated state is not a duplicate:\n%s", r)
			}
			prod.Expect(0, "xadd", "mixed", "--pid", "api-1", "--iid", "m-2", "amount", "2")
			if n := rc.XLen(context.Background(), "mixed").Val(); n != 2 {
				t.Errorf("XLEN mixed = %d, want 2", n)
			}
		}

		// Emulated IDMP writes hashes and sets as claims do, so commands alone
		// cannot keep a producer from claiming: key patterns can. The same
		// rule narrowed to one stream's keys (docs/roles.md).
		narrow := narrowedRule(roles["producer"], "~orders", "~{orders}:idmp*")
		setUser(t, srv, "idmp-producer-orders", narrow, "orders-pw")
		po := clitest.New(t, "IDMPCTL_URL=redis://idmp-producer-orders@"+srv.Addr+"/0", "IDMPCTL_PASSWORD=orders-pw")
		po.Expect(0, with("xadd", "orders", "--pid", "api-1", "--iid", "o-4", "amount", "9")...)
		deniedWritesNothing(t, po, "claim", "acquire", "idem:new")
		deniedWritesNothing(t, po, with("xadd", "payments", "--pid", "api-1", "--iid", "p-1", "amount", "9")...)
	})

	t.Run("worker", func(t *testing.T) {
		w := as(t, "worker")
		tok := strings.TrimSpace(w.Expect(0, "claim", "acquire", "job:1", "--lease", "1m").Stdout)
		w.Expect(0, "claim", "renew", "job:1", "--token", tok)
		w.Expect(0, "claim", "complete", "job:1", "--token", tok, "--result", "done")
		if r := w.Expect(1, "claim", "acquire", "job:1"); strings.TrimSpace(r.Stdout) != "done" {
			t.Errorf("a redelivery:\n%s", r)
		}
		tok = strings.TrimSpace(w.Expect(0, "claim", "acquire", "job:2").Stdout)
		w.Expect(0, "claim", "fail", "job:2", "--token", tok, "--error", "boom")
		tok = strings.TrimSpace(w.Expect(0, "claim", "acquire", "job:2").Stdout)
		w.Expect(0, "claim", "release", "job:2", "--token", tok)
		if r := w.Expect(0, "claim", "run", "job:3", "--", "echo", "ran"); strings.TrimSpace(r.Stdout) != "ran" {
			t.Errorf("claim run:\n%s", r)
		}
		if r := w.Expect(0, "claim", "run", "job:3", "--", "echo", "again"); strings.TrimSpace(r.Stdout) != "ran" {
			t.Errorf("claim run replays:\n%s", r)
		}
		// A key that is no claim record: said so (65), from its TYPE.
		if _, err := srv.Do("SET", "job:str", "x"); err != nil {
			t.Fatal(err)
		}
		if r := w.Expect(65, "claim", "acquire", "job:str"); !strings.Contains(r.Stderr, "string") {
			t.Errorf("a foreign key:\n%s", r)
		}
		deniedWritesNothing(t, w, with("xadd", "orders", "--pid", "api-1", "--iid", "o-9", "amount", "1")...)
		deniedWritesNothing(t, w, "purge", "--match", "idem:*", "--status", "FAILED", "--yes")
	})

	t.Run("operator", func(t *testing.T) {
		op := as(t, "operator")
		op.Expect(0, "inspect", "orders")
		if r := op.Expect(0, with("cfgset", "orders", "--duration", "300", "--yes")...); !strings.Contains(r.Stdout, "changed") {
			t.Errorf("cfgset:\n%s", r)
		}
		file := filepath.Join(op.Dir, "purge.ndjson")
		r := op.Expect(0, "purge", "--match", "idem:*", "--status", "FAILED", "--backup", file, "--yes")
		if !strings.Contains(r.Stdout, "deleted\tidem:failed") {
			t.Errorf("purge:\n%s", r)
		}
		if r := op.Expect(0, "restore", file); !strings.Contains(r.Stdout, "restored\tidem:failed") {
			t.Errorf("restore:\n%s", r)
		}
		op.Expect(0, "restore", file, "--replace", "--yes")
		op.Expect(0, with("purge", "--stream", "orders", "--yes")...)
		if nativeServer {
			// migrate, with the page's additions for Redis 8.6.
			admin.Expect(0, "xadd", "legacy", "--pid", "api-1", "--iid", "l-1", "--mode", "emulated", "amount", "1")
			if r := op.Expect(0, "migrate", "legacy"); !strings.HasPrefix(r.Stdout, "legacy\tdone\t") {
				t.Errorf("migrate:\n%s", r)
			}
		}
		deniedWritesNothing(t, op, with("xadd", "orders", "--pid", "api-1", "--iid", "o-9", "amount", "1")...)
		deniedWritesNothing(t, op, "claim", "acquire", "idem:new")
	})

	t.Run("denials", func(t *testing.T) { testDenials(t, srv, as, with) })
}

// roleVerbs reads the "runs" column of docs/roles.md's role table: role ->
// the verbs it runs (the operator runs what the monitor runs too).
func roleVerbs(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(rolesDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| (monitor|producer|worker|operator) \\| (.+?) \\| `ACL SETUSER").FindAllStringSubmatch(string(b), -1) {
		for _, v := range regexp.MustCompile("`([a-z-]+)").FindAllStringSubmatch(m[2], -1) {
			out[m[1]] = append(out[m[1]], v[1])
		}
		if strings.Contains(m[2], "what monitor runs") {
			out[m[1]] = append(out[m[1]], out["monitor"]...)
		}
	}
	return out
}

// testDenials runs every verb as every role of docs/roles.md (issue 30
// item 4). A verb the page gives the role never fails for a permission; a
// denial says in idmpctl's words what the user may not run or touch,
// keeps the server's text, and its hint names the role of that page that
// runs the verb.
func testDenials(t *testing.T, srv *redistest.Server, as func(*testing.T, string) *clitest.CLI, with func(...string) []string) {
	verbs := roleVerbs(t)
	ourWords := regexp.MustCompile(`(?m)^idmpctl: (?:.*: )?(?:this user may not (?:run [A-Z]|run a command|access a key)|NOPERM this user (?:has no permission to run the [A-Z]+ command|may not run [A-Z])|NOPERM idmpctl exec .* this user may not run scripts)`)
	roleHint := regexp.MustCompile(`(?m)^hint: (?:.*; )?([a-z-]+) runs as the ([a-z]+(?: or [a-z]+)*) role \(docs/roles\.md\)|^hint: (?:.*; )?exec runs as the role of what it sends \(docs/roles\.md\)`)
	admin := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	batch := filepath.Join(admin.Dir, "b.ndjson")
	if err := os.WriteFile(batch, []byte(`{"iid":"d-1","fields":{"n":"1"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(admin.Dir, "backup.ndjson")
	tok := strings.TrimSpace(admin.Expect(0, "claim", "acquire", "idem:bk").Stdout)
	admin.Expect(0, "claim", "fail", "idem:bk", "--token", tok, "--error", "boom")
	admin.Expect(0, "purge", "--match", "idem:bk", "--status", "FAILED", "--backup", backup, "--yes")
	for _, role := range []string{"monitor", "producer", "worker", "operator"} {
		for _, args := range [][]string{
			with("xadd", "orders", "--pid", "d", "--iid", role, "f", "v"),
			with("xadd", "orders", "--pid", "d-"+role, "--batch", batch),
			with("cfgset", "orders", "--duration", "300", "--yes"),
			{"inspect", "orders"}, {"inspect", "idem:1"}, {"inspect", "--match", "idem:*"}, {"inspect", "--server"},
			{"calc-ttl", "--rate", "100/s", "--ttl", "24h", "--sample", "idem:*"},
			{"claim", "acquire", "idem:d-" + role}, {"claim", "run", "idem:r-" + role, "--", "true"},
			{"purge", "--match", "idem:nothing*", "--yes"}, with("purge", "--stream", "orders", "--yes"),
			{"restore", backup}, {"migrate", "orders"},
			with("exec", "XADD", "orders", "IDMP", "d", "x-"+role, "*", "f", "v"),
		} {
			r := as(t, role).Run(args...)
			runs := slices.Contains(verbs[role], args[0])
			if r.Code != 77 {
				continue
			}
			if runs {
				t.Errorf("%s: %v is the role's (docs/roles.md), refused:\n%s", role, args, r)
			}
			if !ourWords.MatchString(r.Stderr) {
				t.Errorf("%s: %v: the denial does not say what the user may not run, in idmpctl's words:\n%s", role, args, r)
			}
			m := roleHint.FindStringSubmatch(r.Stderr)
			if m == nil {
				t.Errorf("%s: %v: the hint names no role of docs/roles.md:\n%s", role, args, r)
				continue
			}
			if m[1] == "" && args[0] != "exec" {
				t.Errorf("%s: %v: the hint is exec's:\n%s", role, args, r)
			}
			for _, named := range strings.Fields(strings.ReplaceAll(m[2], " or ", " ")) {
				if m[1] != args[0] || !slices.Contains(verbs[named], m[1]) {
					t.Errorf("%s: %v: the hint's %s role does not run %s in docs/roles.md:\n%s", role, args, named, args[0], r)
				}
			}
		}
	}
}
