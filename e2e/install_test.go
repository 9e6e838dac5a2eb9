package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// installScripts are the scripts that install the test servers.
var installScripts = []string{"../scripts/install-redis.sh", "../.ci/run"}

// TestInstallScriptsKeepAptSources: the install scripts name no mirror and
// write nothing under /etc/apt (issue 30 item 3): a developer's or a CI
// machine's apt sources stay as they were. The mirror is the one the
// machine's own Debian source names, in either format apt reads (one-line
// or deb822), and the experimental and backports lines go to a list of
// the build's own, under its cache directory.
func TestInstallScriptsKeepAptSources(t *testing.T) {
	url := regexp.MustCompile(`[a-z]+://`)
	write := regexp.MustCompile(`>|\btee\b|\bcp\b|\bmv\b|\bsed -i`)
	for _, f := range installScripts {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if url.MatchString(line) || strings.Contains(line, "/etc/apt") && write.MatchString(line) {
				t.Errorf("%s:%d names a mirror or writes apt's configuration: %s", f, i+1, line)
			}
		}
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no apt-get here: the mirror's derivation is not run")
	}
	// A machine of its own (APT_CONFIG): its sources in both formats, a
	// security source that is not the mirror, and a line for another
	// release that is not either.
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(filepath.Join(etc, "parts"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "apt.conf")
	if err := os.WriteFile(conf, []byte(`Dir::Etc::sourcelist "`+etc+`/sources.list"; Dir::Etc::sourceparts "`+etc+`/parts";`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mirror := func(list, parts string) (string, error) {
		t.Helper()
		for name, text := range map[string]string{"sources.list": list, "parts/debian.sources": parts} {
			if err := os.WriteFile(filepath.Join(etc, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sh := exec.Command("bash", "-c", `set -e; source ../scripts/install-redis.sh; private_list redis86 bookworm deb-src experimental; cat "$APT_DIR/redis86.list"`)
		sh.Env = append(os.Environ(), "APT_CONFIG="+conf, "APT_DIR="+filepath.Join(dir, "apt"))
		out, err := sh.CombinedOutput()
		return string(out), err
	}
	const security = "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
	for _, c := range []struct{ name, list, parts, want string }{
		{"deb822", "", security + "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n",
			"deb-src http://mirror.example/debian/ experimental main\n"},
		{"one-line", "deb http://old.example/debian bullseye main\ndeb [arch=amd64] http://one.example/debian/ bookworm main contrib\n", security,
			"deb-src http://one.example/debian/ experimental main\n"},
	} {
		if got, err := mirror(c.list, c.parts); err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, got, err, c.want)
		}
	}
	// No Debian source to take a mirror from: a failure that says so.
	got, err := mirror("", security)
	if err == nil || !strings.Contains(got, "no Debian source for bookworm") {
		t.Errorf("without a source: %q (%v)", got, err)
	}
}
