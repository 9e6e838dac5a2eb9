package e2e

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// Hostile inputs beyond what the scripts testdata/script/hostile/*.txtar
// cover: a megabyte of JSON (through a file: one argument is at most 128 KiB
// on Linux) and keys holding every byte value, NUL included (written with a
// raw client, read back through idmpctl).

// TestHostileJSONMegabyte: a 1 MB value given with --json @FILE (an
// argument cannot be that long) is stored byte-exact, and a repeat is a
// duplicate with the same ID.
func TestHostileJSONMegabyte(t *testing.T) {
	t.Parallel()
	srv := redistest.New(t)
	cli := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	value := strings.Repeat("\x00\x01é\"\\\n", 1<<20/8)
	fields, err := json.Marshal(map[string]string{"big": value})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cli.Dir, "fields.json")
	if err := os.WriteFile(file, fields, 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli.Run("xadd", "s", "--pid", "p", "--iid", "i", "--json", "@"+file)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	id := strings.TrimSpace(r.Stdout)
	sum := sha1.Sum([]byte(value))
	got, err := srv.Do("EVAL", `local e = redis.call("XRANGE", KEYS[1], "-", "+")[1][2]
		return e[1] .. " " .. #e[2] .. " " .. redis.sha1hex(e[2])`, "1", "s")
	if want := "big " + strconv.Itoa(len(value)) + " " + hex.EncodeToString(sum[:]); err != nil || got != want {
		t.Fatalf("stored %q, %v; want %q", got, err, want)
	}
	r = cli.Run("xadd", "s", "--pid", "p", "--iid", "i", "--json", "@"+file, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"id":"`+id+`"`) || !strings.Contains(r.Stdout, `"duplicate":true`) {
		t.Fatalf("repeat: exit %d, %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestHostileKeysRoundTrip writes keys holding every byte value (NUL, the
// controls, quotes, backslashes, bytes that are not UTF-8) and checks that
// inspect --match and purge --match print exactly one line per key, and
// that each key comes back byte-exact from its field: as is, or Go-quoted
// when it starts with '"' or holds anything but printable UTF-8.
func TestHostileKeysRoundTrip(t *testing.T) {
	t.Parallel()
	srv := redistest.New(t)
	cli := clitest.New(t, "IDMPCTL_URL="+srv.URL)
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
	r := cli.Run("inspect", "--match", "*rt:*")
	if r.Code != 0 {
		t.Fatalf("inspect: exit %d: %s", r.Code, r.Stderr)
	}
	out := r.Stdout
	if got := fieldKeys(out, 0); !slices.Equal(got, keys) {
		t.Fatalf("inspect --match: %d lines, want %d keys:\n%q\n%q", len(got), len(keys), got, keys)
	}
	for _, plain := range []string{"rt:plain", "rt:é€", "rt: spaced ", `rt:\x41`} {
		if !strings.Contains(out, "\n"+plain+"\t") && !strings.HasPrefix(out, plain+"\t") {
			t.Errorf("%q is not printed as is", plain)
		}
	}
	r = cli.Run("purge", "--match", "*rt:*", "--yes")
	if r.Code != 0 {
		t.Fatalf("purge: exit %d: %s", r.Code, r.Stderr)
	}
	if got := fieldKeys(r.Stdout, 1); !slices.Equal(got, keys) {
		t.Fatalf("purge --match: %d lines, want %d keys", len(got), len(keys))
	}
	if n, _ := srv.Do("DBSIZE"); n != "0" {
		t.Fatalf("%s keys left", n)
	}
}
