package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/cmd"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// Hostile inputs that a command line cannot carry (an argument is at most
// 128 KiB on Linux and never holds a NUL), run in process through the same
// command tree. The scripts testdata/script/hostile_*.txtar cover what a
// shell can pass.

// runInProcess runs idmpctl with args against url and returns its stdout,
// stderr and exit code.
func runInProcess(t *testing.T, url string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	f := &cmd.Factory{
		In: strings.NewReader(""), Out: &out, Err: &errb, Now: time.Now,
		Getenv: func(k string) string {
			if k == "IDMPCTL_URL" {
				return url
			}
			return ""
		},
		IsTTY: func(any) bool { return false },
	}
	root := cmd.NewRootCmd(f)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err != nil {
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), exit.Code(err)
}

func startHostileServer(t *testing.T) *redistest.Server {
	t.Helper()
	srv, err := redistest.Start(redistest.Options{Dir: t.TempDir(), Unix: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// TestHostileJSONMegabyte: a 1 MB value given with --json (possible in
// process, or where the OS allows such an argument) is stored byte-exact,
// and a repeat is a duplicate with the same ID.
func TestHostileJSONMegabyte(t *testing.T) {
	t.Parallel()
	srv := startHostileServer(t)
	value := strings.Repeat("\x00\x01é\"\\\n", 1<<20/8)
	fields, err := json.Marshal(map[string]string{"big": value})
	if err != nil {
		t.Fatal(err)
	}
	out, errText, code := runInProcess(t, srv.URL, "xadd", "s", "--pid", "p", "--iid", "i", "--json", string(fields))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errText)
	}
	id := strings.TrimSpace(out)
	sum := sha1.Sum([]byte(value))
	got, err := srv.Do("EVAL", `local e = redis.call("XRANGE", KEYS[1], "-", "+")[1][2]
		return e[1] .. " " .. #e[2] .. " " .. redis.sha1hex(e[2])`, "1", "s")
	if want := "big " + strconv.Itoa(len(value)) + " " + hex.EncodeToString(sum[:]); err != nil || got != want {
		t.Fatalf("stored %q, %v; want %q", got, err, want)
	}
	out, errText, code = runInProcess(t, srv.URL, "xadd", "s", "--pid", "p", "--iid", "i", "--json", string(fields), "-o", "json")
	if code != 0 || !strings.Contains(out, `"id":"`+id+`"`) || !strings.Contains(out, `"duplicate":true`) {
		t.Fatalf("repeat: exit %d, %s %s", code, out, errText)
	}
}

// TestHostileKeysRoundTrip writes keys holding every byte value (NUL, the
// controls, quotes, backslashes, bytes that are not UTF-8) and checks that
// inspect --match and purge --match print exactly one line per key, and
// that each key comes back byte-exact from its field: as is, or Go-quoted
// when it starts with '"' or holds anything but printable UTF-8.
func TestHostileKeysRoundTrip(t *testing.T) {
	t.Parallel()
	srv := startHostileServer(t)
	var keys []string
	for b := range 256 {
		keys = append(keys, "rt:"+string([]byte{byte(b)})+"x")
	}
	keys = append(keys, "rt:plain", `"rt:quoted"`, "rt:é€", "rt:\u00a0", "rt:\u200b", "rt: spaced ", `rt:\x41`)
	for _, k := range keys {
		if reply, err := srv.Do("SET", k, "COMPLETED"); err != nil || reply != "OK" {
			t.Fatalf("SET %q: %q %v", k, reply, err)
		}
	}
	slices.Sort(keys)

	fieldKeys := func(out string, field int) []string {
		var got []string
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")[field]
			if strings.HasPrefix(f, `"`) {
				u, err := strconv.Unquote(f)
				if err != nil {
					t.Fatalf("field %s: %v", f, err)
				}
				f = u
			}
			got = append(got, f)
		}
		slices.Sort(got)
		return got
	}
	out, errText, code := runInProcess(t, srv.URL, "inspect", "--match", "*rt:*")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errText)
	}
	if got := fieldKeys(out, 0); !slices.Equal(got, keys) {
		t.Fatalf("inspect --match: %d lines, want %d keys:\n%q\n%q", len(got), len(keys), got, keys)
	}
	for _, plain := range []string{"rt:plain", "rt:é€", "rt: spaced ", `rt:\x41`} {
		if !strings.Contains(out, "\n"+plain+"\t") && !strings.HasPrefix(out, plain+"\t") {
			t.Errorf("%q is not printed as is", plain)
		}
	}
	out, errText, code = runInProcess(t, srv.URL, "purge", "--match", "*rt:*", "--yes")
	if code != 0 {
		t.Fatalf("purge: exit %d: %s", code, errText)
	}
	if got := fieldKeys(out, 1); !slices.Equal(got, keys) {
		t.Fatalf("purge --match: %d lines, want %d keys", len(got), len(keys))
	}
	if n, _ := srv.Do("DBSIZE"); n != "0" {
		t.Fatalf("%s keys left", n)
	}
}
