package e2e

// Security tests against real servers: TLS (server verification, client
// certificates, --tls-insecure, bad TLS configuration), ACL users (reads
// allowed, writes refused with the server's NOPERM kept verbatim), and
// secrets (a password from the environment never printed, never in ps).
// Each test execs the `idmpctl` that TestMain puts on PATH (internal/clitest).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/cmd"
	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/spf13/cobra"
)

// secWant checks the exit code and that stderr matches every pattern (each a
// multi-line regexp, so ^ and $ anchor lines).
func secWant(t *testing.T, r clitest.Result, code int, stderr ...string) {
	t.Helper()
	if r.Code != code {
		t.Errorf("exit %d, want %d\n%s", r.Code, code, r)
		return
	}
	for _, pat := range stderr {
		if !regexp.MustCompile("(?m)" + pat).MatchString(r.Stderr) {
			t.Errorf("stderr does not match %q\n%s", pat, r)
		}
	}
}

func secStdout(t *testing.T, r clitest.Result, patterns ...string) {
	t.Helper()
	for _, pat := range patterns {
		if !regexp.MustCompile("(?m)" + pat).MatchString(r.Stdout) {
			t.Errorf("stdout does not match %q\n%s", pat, r)
		}
	}
}

func secPKI(t *testing.T) *redistest.TLSFiles {
	t.Helper()
	files, err := redistest.GenerateTLS(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// secServerSays sends AUTH user pass and then one command on a fresh TCP
// connection and returns the command's reply line as the server wrote it
// (an error without its '-', an integer with its ':', a bulk string's
// text): for errors, what idmpctl must pass on verbatim.
func secServerSays(t *testing.T, addr, user, pass string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	for _, cmd := range [][]string{{"AUTH", user, pass}, args} {
		fmt.Fprintf(&b, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	readLine := func() string {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return strings.TrimRight(line, "\r\n")
	}
	if ok := readLine(); ok != "+OK" {
		t.Fatalf("AUTH %s: %s", user, ok)
	}
	reply := readLine()
	if strings.HasPrefix(reply, "$") && reply != "$-1" {
		reply = readLine() // a bulk string (short, no CRLF inside)
	}
	return strings.TrimPrefix(reply, "-")
}

// ---------------------------------------------------------------- TLS

func TestTLS(t *testing.T) {
	t.Parallel()
	files := secPKI(t)
	verified := redistest.NewWith(t, redistest.Options{TLS: &redistest.TLSOptions{Files: files}})
	ca := []string{"--tls-ca", files.CA}

	t.Run("verified", func(t *testing.T) {
		cli := clitest.New(t)
		r := cli.Run(append([]string{"inspect", "--server", "--url", verified.TLSURL}, ca...)...)
		secWant(t, r, 0)
		secStdout(t, r, `^url\t`+regexp.QuoteMeta(verified.TLSURL)+`$`, `^role\tmaster$`)
		if r.Stderr != "" {
			t.Errorf("a verified connection warns:\n%s", r)
		}
		// The certificate names localhost as well as 127.0.0.1.
		env := []string{"IDMPCTL_URL=rediss://localhost:" + strconv.Itoa(verified.TLSPort) + "/0"}
		secWant(t, cli.With(env...).Run(append([]string{"inspect", "--server"}, ca...)...), 0)
		// Writes (Lua on a server without native IDMP) and claims over TLS.
		env = []string{"IDMPCTL_URL=" + verified.TLSURL}
		r = cli.With(env...).Run(append([]string{"xadd", "orders", "--pid", "api", "--iid", "o-1", "amount", "100"}, ca...)...)
		secWant(t, r, 0)
		secStdout(t, r, `^\d+-\d+$`)
		r = cli.With(env...).Run(append([]string{"claim", "acquire", "idem:tls"}, ca...)...)
		secWant(t, r, 0)
		secStdout(t, r, `^[0-9]{16}$`)
		r = cli.With(env...).Run(append([]string{"inspect", "idem:tls", "-o", "json"}, ca...)...)
		secWant(t, r, 0)
		secStdout(t, r, `"status":"PROCESSING"`)
	})

	t.Run("client-certificate", func(t *testing.T) {
		cli := clitest.New(t)
		srv := redistest.NewWith(t, redistest.Options{TLS: &redistest.TLSOptions{Files: files, AuthClients: true}})
		env := []string{"IDMPCTL_URL=" + srv.TLSURL}
		cert := []string{"--tls-cert", files.ClientCert, "--tls-key", files.ClientKey}
		r := cli.With(env...).Run(append(append([]string{"inspect", "--server"}, ca...), cert...)...)
		secWant(t, r, 0)
		secStdout(t, r, `^role\tmaster$`)
		r = cli.With(env...).Run(append(append([]string{"claim", "acquire", "idem:mtls"}, ca...), cert...)...)
		secWant(t, r, 0)
		// A batch's adds go on a pipe of their own, dialed the same way.
		batch := filepath.Join(t.TempDir(), "b.ndjson")
		if err := os.WriteFile(batch, []byte("{\"iid\":\"a\",\"fields\":{\"f\":\"1\"}}\n{\"iid\":\"b\",\"fields\":{\"f\":\"2\"}}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r = cli.With(env...).Run(append(append([]string{"xadd", "orders", "--pid", "p", "--batch", batch}, ca...), cert...)...)
		secWant(t, r, 0)
		secStdout(t, r, `^\d+-\d+\tadded$`)

		// Without a certificate the server ends the handshake with an alert
		// (TLS 1.3: certificate_required): a configuration error, with the
		// TLS text and a hint naming the missing flags, not --tls-ca.
		r = cli.With(env...).Run(append([]string{"inspect", "--server"}, ca...)...)
		secWant(t, r, 78,
			`^idmpctl: connect `+regexp.QuoteMeta(srv.TLSURL)+`: remote error: tls: certificate required$`,
			`^hint: the server requires a client certificate .*--tls-cert and --tls-key$`)
		if r.Stdout != "" {
			t.Errorf("stdout on failure:\n%s", r)
		}
		secWant(t, cli.With(env...).Run(append([]string{"xadd", "orders", "--pid", "p", "--iid", "i", "f", "v"}, ca...)...), 78,
			`remote error: tls: certificate required`)

		// A certificate from a CA the server does not trust: 78 as well.
		other := []string{"--tls-cert", files.OtherClientCert, "--tls-key", files.OtherClientKey}
		r = cli.With(env...).Run(append(append([]string{"inspect", "--server"}, ca...), other...)...)
		secWant(t, r, 78, `^idmpctl: connect .*: remote error: tls: `, `^hint: the server refused the TLS handshake: check --tls-cert and --tls-key`)
	})

	t.Run("client-certificate-tls1.2", func(t *testing.T) {
		cli := clitest.New(t)
		// TLS 1.2 rejects a missing certificate inside the handshake, with
		// another alert: the same code.
		srv := redistest.NewWith(t, redistest.Options{TLS: &redistest.TLSOptions{Files: files, AuthClients: true}, Config: []string{`tls-protocols "TLSv1.2"`}})
		env := []string{"IDMPCTL_URL=" + srv.TLSURL}
		secWant(t, cli.With(env...).Run(append([]string{"inspect", "--server"}, ca...)...), 78,
			`^idmpctl: connect .*: remote error: tls: `, `^hint: the server `)
		secWant(t, cli.With(env...).Run(append([]string{"inspect", "--server", "--tls-cert", files.ClientCert, "--tls-key", files.ClientKey}, ca...)...), 0)
	})

	t.Run("unknown-ca", func(t *testing.T) {
		cli := clitest.New(t)
		// The server's certificate is signed by another CA.
		srv := redistest.NewWith(t, redistest.Options{TLS: &redistest.TLSOptions{Files: files, Cert: files.OtherServerCert, Key: files.OtherServerKey}})
		env := []string{"IDMPCTL_URL=" + srv.TLSURL}
		unknown := `^idmpctl: connect ` + regexp.QuoteMeta(srv.TLSURL) + `: tls: failed to verify certificate: x509: certificate signed by unknown authority`
		hint := `^hint: check --tls-ca \(the CA that signed the server's certificate\)`
		for _, args := range [][]string{
			append([]string{"inspect", "--server"}, ca...),
			{"inspect", "--server"}, // the system's roots do not know it either
			append([]string{"xadd", "orders", "--pid", "p", "--iid", "i", "f", "v"}, ca...),
			append([]string{"claim", "acquire", "k"}, ca...),
		} {
			r := cli.With(env...).Run(args...)
			secWant(t, r, 78, unknown, hint)
			if r.Stdout != "" {
				t.Errorf("stdout on failure:\n%s", r)
			}
		}
		// The certificate is good when its own CA is given.
		secWant(t, cli.With(env...).Run("inspect", "--server", "--tls-ca", files.OtherCA), 0)
	})

	t.Run("insecure", func(t *testing.T) {
		cli := clitest.New(t)
		srv := redistest.NewWith(t, redistest.Options{TLS: &redistest.TLSOptions{Files: files, Cert: files.OtherServerCert, Key: files.OtherServerKey}})
		env := []string{"IDMPCTL_URL=" + srv.TLSURL}
		const warning = "idmpctl: warning: --tls-insecure: the server's certificate is not verified\n"
		r := cli.With(env...).Run("inspect", "--server", "--tls-insecure")
		secWant(t, r, 0)
		if r.Stderr != warning {
			t.Errorf("stderr = %q, want %q", r.Stderr, warning)
		}
		r = cli.With(env...).Run("inspect", "--server", "--tls-insecure", "-o", "json")
		secWant(t, r, 0)
		if r.Stderr != warning {
			t.Errorf("stderr = %q, want %q", r.Stderr, warning)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep["url"] != srv.TLSURL {
			t.Errorf("json: %v %v\n%s", err, rep, r)
		}
		r = cli.With(env...).Run("xadd", "orders", "--pid", "p", "--iid", "i", "f", "v", "--tls-insecure")
		secWant(t, r, 0, `^idmpctl: warning: --tls-insecure`)
	})

	t.Run("tls-flags-need-rediss", func(t *testing.T) {
		cli := clitest.New(t)
		plain := redistest.NewWith(t, redistest.Options{})
		for _, url := range []string{plain.URL, "unix://" + filepath.Join(t.TempDir(), "x.sock")} {
			for _, flags := range [][]string{
				{"--tls-ca", files.CA},
				{"--tls-cert", files.ClientCert, "--tls-key", files.ClientKey},
				{"--tls-insecure"},
			} {
				r := cli.Run(append([]string{"inspect", "--server", "--url", url}, flags...)...)
				secWant(t, r, 78, `^idmpctl: TLS options: "`+regexp.QuoteMeta(url)+`" is not a rediss:// URL$`)
			}
		}
		secWant(t, cli.With("IDMPCTL_URL="+plain.URL).Run("claim", "acquire", "k", "--tls-insecure"), 78, `is not a rediss:// URL`)
	})

	t.Run("unreadable-files", func(t *testing.T) {
		cli := clitest.New(t)
		dir := t.TempDir()
		env := []string{"IDMPCTL_URL=" + verified.TLSURL}
		missing := filepath.Join(dir, "missing.pem")
		notPEM := filepath.Join(dir, "not.pem")
		if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			flags  []string
			stderr string
		}{
			{[]string{"--tls-ca", missing}, `^idmpctl: read --tls-ca: open .*missing.pem: no such file or directory$`},
			{[]string{"--tls-ca", dir}, `^idmpctl: read --tls-ca: read .*: is a directory$`},
			{[]string{"--tls-ca", notPEM}, `^idmpctl: read --tls-ca: .*not.pem holds no PEM certificate$`},
			{[]string{"--tls-ca", files.CA, "--tls-cert", files.ClientCert}, `--tls-cert and --tls-key go together`},
			{[]string{"--tls-ca", files.CA, "--tls-key", files.ClientKey}, `--tls-cert and --tls-key go together`},
			{[]string{"--tls-ca", files.CA, "--tls-cert", missing, "--tls-key", files.ClientKey}, `^idmpctl: read --tls-cert/--tls-key: open .*missing.pem: no such file or directory$`},
			{[]string{"--tls-ca", files.CA, "--tls-cert", files.ClientCert, "--tls-key", dir}, `^idmpctl: read --tls-cert/--tls-key: read .*: is a directory$`},
			{[]string{"--tls-ca", files.CA, "--tls-cert", files.ClientCert, "--tls-key", files.OtherClientKey}, `^idmpctl: read --tls-cert/--tls-key: tls: private key does not match public key$`},
		}
		if os.Geteuid() != 0 { // root reads a mode-0 file
			locked := filepath.Join(dir, "locked.pem")
			b, err := os.ReadFile(files.CA)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(locked, b, 0o000); err != nil {
				t.Fatal(err)
			}
			cases = append(cases, struct {
				flags  []string
				stderr string
			}{[]string{"--tls-ca", locked}, `^idmpctl: read --tls-ca: open .*locked.pem: permission denied$`})
		}
		for _, c := range cases {
			for _, verb := range [][]string{{"inspect", "--server"}, {"xadd", "s", "--pid", "p", "--iid", "i", "f", "v"}} {
				r := cli.With(env...).Run(append(verb, c.flags...)...)
				secWant(t, r, 78, c.stderr)
				if r.Stdout != "" {
					t.Errorf("stdout on failure:\n%s", r)
				}
			}
		}
	})

	t.Run("scheme-mixups", func(t *testing.T) {
		cli := clitest.New(t)
		// redis:// on a TLS port: the server drops the plain connection.
		r := cli.Run("inspect", "--server", "--url", "redis://"+verified.TLSAddr+"/0", "--timeout", "2s")
		secWant(t, r, 69, `^idmpctl: connect redis://`+regexp.QuoteMeta(verified.TLSAddr)+`/0: .*(the server closed the connection|connection reset by peer)$`, `^hint: .*use rediss://`)
		// rediss:// on a plain port: the handshake is never answered.
		plain := redistest.NewWith(t, redistest.Options{})
		r = cli.Run("inspect", "--server", "--url", "rediss://"+plain.Addr+"/0", "--tls-ca", files.CA, "--timeout", "1s")
		secWant(t, r, 69, `^idmpctl: connect rediss://`, `^hint: no answer to the TLS handshake: .*does this port speak TLS\?`)
	})
}

// ---------------------------------------------------------------- ACL

// secACLConfig: the default user has a password; reader may read (plus INFO,
// COMMAND for the connect probe, and TIME: reads decide lease and age on
// the server's clock); noinfo lacks INFO and COMMAND (the probe falls back
// to PING); scripter may run scripts but not the writes inside them;
// narrow may do anything, but only on app:* keys.
var secACLConfig = []string{
	"user default on >default-pw ~* &* +@all",
	"user reader on >reader-pw ~* +@read +ping +info +command +time",
	"user noinfo on >noinfo-pw ~* +@read +ping +time",
	"user scripter on >scripter-pw ~* +@read +ping +info +command +time +evalsha +eval +script|load",
	"user narrow on >narrow-pw ~app:* +@all",
}

func TestACL(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{Config: secACLConfig})
	cli := clitest.New(t)
	as := func(user, pw string) []string {
		return []string{"IDMPCTL_URL=redis://" + user + "@" + srv.Addr + "/0", "IDMPCTL_PASSWORD=" + pw}
	}
	admin := []string{"IDMPCTL_URL=" + srv.URL, "REDISCLI_AUTH=default-pw"}
	secWant(t, cli.With(admin...).Run("xadd", "orders", "--pid", "api", "--iid", "o-1", "amount", "100"), 0)
	for _, k := range []string{"idem:a", "idem:b"} {
		secWant(t, cli.With(admin...).Run("claim", "acquire", k), 0)
	}

	t.Run("reader-reads", func(t *testing.T) {
		cli := clitest.New(t)
		env := as("reader", "reader-pw")
		r := cli.With(env...).Run("inspect", "--server")
		secWant(t, r, 0)
		secStdout(t, r, `^url\tredis://reader@`+regexp.QuoteMeta(srv.Addr)+`/0$`, `^server\t(redis|valkey) \d+\.\d+`, `^role\tmaster$`)
		r = cli.With(env...).Run("inspect", "--server", "-o", "json")
		secWant(t, r, 0)
		secStdout(t, r, `"url":"redis://reader@`)
		r = cli.With(env...).Run("inspect", "idem:a")
		secWant(t, r, 0)
		secStdout(t, r, `^status\tPROCESSING$`)
		r = cli.With(env...).Run("inspect", "idem:a", "-o", "json")
		secWant(t, r, 0)
		secStdout(t, r, `"status":"PROCESSING"`)
		r = cli.With(env...).Run("inspect", "--match", "idem:*", "-o", "json")
		secWant(t, r, 0)
		secStdout(t, r, `"key":"idem:a"`, `"key":"idem:b"`)
		if r.Stderr != "" {
			t.Errorf("stderr:\n%s", r)
		}
	})

	t.Run("reader-writes-denied", func(t *testing.T) {
		cli := clitest.New(t)
		env := as("reader", "reader-pw")
		for _, c := range []struct {
			args []string
			what string
		}{
			{[]string{"xadd", "orders", "--pid", "api", "--iid", "o-2", "amount", "5"}, `xadd "orders"`},
			{[]string{"xadd", "orders", "--pid", "api", "--iid", "o-2", "amount", "5", "-o", "json"}, `xadd "orders"`},
			{[]string{"claim", "acquire", "idem:c"}, `claim acquire "idem:c"`},
		} {
			r := cli.With(env...).Run(c.args...)
			secWant(t, r, 77, `^idmpctl: `+regexp.QuoteMeta(c.what)+`: this user may not run [A-Z]+: NOPERM `, `^hint: [a-z]+ runs as the [a-z]+ role \(docs/roles\.md\)`)
			if r.Stdout != "" {
				t.Errorf("stdout on failure:\n%s", r)
			}
			// The server's text, verbatim: ask the server the same denied
			// command as the same user.
			m := regexp.MustCompile(`NOPERM .*'([a-z]+)' command`).FindStringSubmatch(r.Stderr)
			if m == nil {
				t.Errorf("no NOPERM for a command in\n%s", r)
				continue
			}
			denied := []string{m[1], "k", "0"} // EVALSHA sha numkeys
			switch m[1] {
			case "xadd": // native IDMP (Redis 8.6+)
				denied = []string{m[1], "k", "*", "f", "v"}
			case "multi": // native IDMP, after auto mode's script was denied
				denied = []string{m[1]}
			}
			says := secServerSays(t, srv.Addr, "reader", "reader-pw", denied...)
			if !strings.Contains(r.Stderr, ": "+says+"\n") {
				t.Errorf("server says %q; idmpctl's stderr does not keep it verbatim:\n%s", says, r)
			}
		}
		// Nothing was written.
		if got := secServerSays(t, srv.Addr, "default", "default-pw", "EXISTS", "idem:c"); got != ":0" {
			t.Errorf("idem:c exists after a denied acquire: %s", got)
		}
		if got := secServerSays(t, srv.Addr, "default", "default-pw", "XLEN", "orders"); got != ":1" {
			t.Errorf("XLEN orders = %s after a denied xadd, want :1", got)
		}
	})

	t.Run("probe-without-info", func(t *testing.T) {
		cli := clitest.New(t)
		// INFO and COMMAND denied: the connect probe proves the connection
		// with PING and reads go on.
		env := as("noinfo", "noinfo-pw")
		r := cli.With(env...).Run("inspect", "--server")
		secWant(t, r, 0)
		secStdout(t, r, `^url\tredis://noinfo@`, `^mode\tstandalone$`, `^ping-rtt-us\t\d+$`)
		r = cli.With(env...).Run("inspect", "--server", "-o", "json")
		secWant(t, r, 0)
		var rep map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Errorf("json: %v\n%s", err, r)
		}
		r = cli.With(env...).Run("inspect", "idem:b")
		secWant(t, r, 0)
		secStdout(t, r, `^status\tPROCESSING$`)
		r = cli.With(env...).Run("inspect", "--match", "idem:*")
		secWant(t, r, 0)
		secStdout(t, r, `^idem:a\t`, `^idem:b\t`)
	})

	t.Run("denied-inside-script", func(t *testing.T) {
		cli := clitest.New(t)
		// EVALSHA allowed, the write inside it denied: the server says ERR,
		// not NOPERM, and it is still a permission failure. (Native IDMP
		// sends XADD itself: a plain NOPERM.)
		env := as("scripter", "scripter-pw")
		for _, args := range [][]string{
			{"xadd", "orders", "--pid", "api", "--iid", "o-3", "amount", "5"},
			{"claim", "acquire", "idem:d"},
		} {
			r := cli.With(env...).Run(args...)
			secWant(t, r, 77, `: (?:this user may not run (?:[A-Z]+|a command that idmpctl's script runs \(the server does not say which: ACL LOG does\)): (NOPERM |ERR The user executing the script can't run this command|ERR ACL failure in script)|NOPERM this user has no permission to run the [A-Z]+ command on key )`, `^hint: [a-z]+ runs as the [a-z]+ role \(docs/roles\.md\)`)
		}
	})

	t.Run("key-patterns", func(t *testing.T) {
		cli := clitest.New(t)
		env := as("narrow", "narrow-pw")
		r := cli.With(env...).Run("claim", "acquire", "idem:e")
		secWant(t, r, 77, `^idmpctl: claim acquire "idem:e": this user may not access a key this command needs \(its key patterns, ~\.\.\., leave it out\): NOPERM .*key`)
		says := secServerSays(t, srv.Addr, "narrow", "narrow-pw", "EXISTS", "idem:e")
		if !strings.Contains(r.Stderr, ": "+says+"\n") {
			t.Errorf("server says %q; not verbatim in\n%s", says, r)
		}
		secWant(t, cli.With(env...).Run("claim", "acquire", "app:e"), 0)
		secWant(t, cli.With(env...).Run("inspect", "idem:a"), 77, `NOPERM .*key`)
	})

	t.Run("wrong-password", func(t *testing.T) {
		cli := clitest.New(t)
		wrongpass := `^idmpctl: connect redis://[^:]*@?` + regexp.QuoteMeta(srv.Addr) + `/0: WRONGPASS invalid username-password pair or user is disabled\.$`
		// The hint names where the refused password came from.
		for _, c := range []struct {
			env  []string
			from string
		}{
			{as("reader", "not-the-reader-pw"), "IDMPCTL_PASSWORD"},
			{as("nobody", "reader-pw"), "IDMPCTL_PASSWORD"},
			{[]string{"IDMPCTL_URL=" + srv.URL, "REDISCLI_AUTH=not-the-default-pw"}, "REDISCLI_AUTH"},
		} {
			env, hint := c.env, `^hint: the password from `+c.from+` was refused: check it, and the ACL user in the URL`
			for _, args := range [][]string{{"inspect", "--server"}, {"xadd", "s", "--pid", "p", "--iid", "i", "f", "v"}, {"claim", "acquire", "k"}} {
				r := cli.With(env...).Run(args...)
				secWant(t, r, 77, wrongpass, hint)
				if strings.Contains(r.Stderr+r.Stdout, "not-the-") {
					t.Errorf("the password was echoed:\n%s", r)
				}
			}
		}
		// A user named without any password: logged in as that user with an
		// empty one (never as the default user), so WRONGPASS, and a hint
		// that says no password was given.
		secWant(t, cli.With("IDMPCTL_URL=redis://reader@"+srv.Addr+"/0").Run("inspect", "--server"), 77,
			wrongpass, `^hint: the URL names an ACL user but no password was given: put it in IDMPCTL_PASSWORD`)
	})

	t.Run("default-user-off", func(t *testing.T) {
		cli := clitest.New(t)
		off := redistest.NewWith(t, redistest.Options{Config: []string{"user default off", secACLConfig[1]}})
		r := cli.With("IDMPCTL_URL=redis://reader@"+off.Addr+"/0", "IDMPCTL_PASSWORD=reader-pw").Run("inspect", "--server")
		secWant(t, r, 0)
		secStdout(t, r, `^role\tmaster$`)
		// Without a user the password goes to the disabled default user.
		secWant(t, cli.With("IDMPCTL_URL="+off.URL, "IDMPCTL_PASSWORD=reader-pw").Run("inspect", "--server"), 77,
			`: WRONGPASS invalid username-password pair or user is disabled\.$`)
		secWant(t, cli.With("IDMPCTL_URL="+off.URL).Run("claim", "acquire", "k"), 77, `: NOAUTH Authentication required\.$`)
	})
}

// ---------------------------------------------------------------- secrets

const (
	secPassword       = "Sw0rdf1sh-Zq81-secret"
	secReaderPassword = "R3ader-Kp44-secret"
)

// secNoSecret fails when either output holds a password (or a recognisable
// part of it).
func secNoSecret(t *testing.T, r clitest.Result) {
	t.Helper()
	for _, s := range []string{secPassword, secReaderPassword, "Sw0rdf1sh", "R3ader-Kp44"} {
		if strings.Contains(r.Stdout, s) || strings.Contains(r.Stderr, s) {
			t.Errorf("output holds the password %q\n%s", s, r)
			return
		}
	}
}

// secCommandPaths lists every command of the tree, as argument lists.
func secCommandPaths() [][]string {
	f := &cmd.Factory{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard, Getenv: os.Getenv, Now: time.Now,
		IsTTY: func(any) bool { return false }}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(cmd.NewRootCmd(f), nil)
	return paths
}

func TestSecretNeverPrinted(t *testing.T) {
	t.Parallel()
	files := secPKI(t)
	srv := redistest.NewWith(t, redistest.Options{Config: []string{
		"user default on >" + secPassword + " ~* &* +@all",
		"user reader on >" + secReaderPassword + " ~* +@read +ping +info +command +time",
	}})
	tlsSrv := redistest.NewWith(t, redistest.Options{TLS: &redistest.TLSOptions{Files: files, Cert: files.OtherServerCert, Key: files.OtherServerKey}, Config: []string{"requirepass " + secPassword}})
	other := redistest.NewWith(t, redistest.Options{Config: []string{"requirepass some-other-password"}})

	// A port that accepts and never answers: the timeout path.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})

	forms := map[string]func(url string) []string{
		"IDMPCTL_PASSWORD": func(url string) []string { return []string{"IDMPCTL_URL=" + url, "IDMPCTL_PASSWORD=" + secPassword} },
		"REDISCLI_AUTH":    func(url string) []string { return []string{"IDMPCTL_URL=" + url, "REDISCLI_AUTH=" + secPassword} },
	}
	for name, envFor := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cli := clitest.New(t)
			env := envFor(srv.URL)
			readerEnv := []string{"IDMPCTL_URL=redis://reader@" + srv.Addr + "/0", name + "=" + secReaderPassword}
			key := "idem:" + strings.ToLower(name)
			steps := []struct {
				env  []string
				code int
				args []string
			}{
				{env, 0, []string{"inspect", "--server"}},
				{env, 0, []string{"inspect", "--server", "-o", "json"}},
				{append(env, "IDMPCTL_FORCE_TTY=1", "NO_COLOR=1"), 0, []string{"inspect", "--server"}},
				{env, 0, []string{"xadd", "orders", "--pid", "api", "--iid", "o-1", "amount", "1"}},
				{env, 0, []string{"xadd", "orders", "--pid", "api", "--iid", "o-1", "amount", "1", "-o", "json"}},
				{env, 0, []string{"inspect", "orders", "-o", "json"}},
				{env, 0, []string{"claim", "acquire", key, "-o", "json"}},
				{env, 0, []string{"inspect", key, "-o", "json"}},
				{env, 0, []string{"inspect", "--match", "idem:*", "-o", "json"}},
				{env, 0, []string{"claim", "run", key + ":run", "-o", "json", "--", "true"}},
				{env, 0, []string{"purge", "--match", "idem:*", "--dry-run", "-o", "json"}},
				{env, 0, []string{"calc-maxsize", "--rate", "100", "--mark-delay", "1s", "-o", "json"}},
				{env, 0, []string{"version"}},
				// Failures.
				{envFor("redis://127.0.0.1:1/0"), 69, []string{"inspect", "--server"}},
				{envFor("redis://localhost:1/0"), 69, []string{"xadd", "s", "--pid", "p", "--iid", "i", "f", "v", "-o", "json"}},
				{envFor("redis://" + ln.Addr().String() + "/0"), 69, []string{"inspect", "--server", "--timeout", "300ms"}},
				{envFor("unix://" + filepath.Join(t.TempDir(), "none.sock")), 69, []string{"claim", "acquire", "k"}},
				{envFor(other.URL), 77, []string{"inspect", "--server", "-o", "json"}},
				{envFor("redis://nobody@" + srv.Addr + "/0"), 77, []string{"claim", "acquire", "k"}},
				{readerEnv, 77, []string{"xadd", "orders", "--pid", "api", "--iid", "o-2", "amount", "1", "-o", "json"}},
				{readerEnv, 77, []string{"claim", "acquire", "idem:x", "-o", "json"}},
				{readerEnv, 0, []string{"inspect", "--server", "-o", "json"}},
				{envFor(tlsSrv.TLSURL), 78, []string{"inspect", "--server", "--tls-ca", files.CA}},
				{envFor(tlsSrv.TLSURL), 0, []string{"inspect", "--server", "--tls-ca", files.OtherCA, "-o", "json"}},
				{envFor("redis://[::1"), 78, []string{"inspect", "--server"}},
				{env, 64, []string{"xadd", "orders", "--bogus"}},
				{env, 64, []string{"inspect"}},
			}
			for _, s := range steps {
				r := cli.With(s.env...).Run(s.args...)
				if r.Code != s.code {
					t.Errorf("exit %d, want %d\n%s", r.Code, s.code, r)
				}
				secNoSecret(t, r)
			}
		})
	}

	t.Run("help", func(t *testing.T) {
		cli := clitest.New(t)
		// Every command's help, with every way of giving a password set:
		// flag defaults never show the environment.
		env := []string{"IDMPCTL_PASSWORD=" + secPassword, "REDISCLI_AUTH=" + secPassword,
			"IDMPCTL_URL=redis://reader:" + secReaderPassword + "@" + srv.Addr + "/0",
			"REDIS_URL=redis://:" + secPassword + "@127.0.0.1:1/0"}
		paths := secCommandPaths()
		if len(paths) < 10 {
			t.Fatalf("only %d commands found: %v", len(paths), paths)
		}
		for _, p := range paths {
			r := cli.With(env...).Run(append(p, "--help")...)
			secWant(t, r, 0)
			want := "Usage:"
			if len(p) == 1 && p[0] == "exit-codes" {
				want = "\nExit codes:\n" // a help topic: its text, no usage
			}
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("no %q in\n%s", want, r)
			}
			secNoSecret(t, r)
		}
		for _, args := range [][]string{{"help"}, {"help", "claim", "run"}, {}} {
			r := cli.With(env...).Run(args...)
			secNoSecret(t, r)
		}
	})

	t.Run("password-in-url", func(t *testing.T) {
		cli := clitest.New(t)
		const warning = `^idmpctl: warning: a password in --url is visible to other users \(ps, shell history\); use IDMPCTL_PASSWORD or REDISCLI_AUTH$`
		for _, c := range []struct{ url, shown string }{
			{"redis://:" + secPassword + "@" + srv.Addr + "/0", "redis://:xxxxx@" + srv.Addr + "/0"},
			{"redis://reader:" + secReaderPassword + "@" + srv.Addr + "/0", "redis://reader:xxxxx@" + srv.Addr + "/0"},
		} {
			r := cli.Run("inspect", "--server", "--url", c.url)
			secWant(t, r, 0, warning)
			secStdout(t, r, `^url\t`+regexp.QuoteMeta(c.shown)+`$`)
			secNoSecret(t, r)
			r = cli.Run("inspect", "--server", "--url", c.url, "-o", "json")
			secWant(t, r, 0, warning)
			var rep map[string]any
			if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep["url"] != c.shown {
				t.Errorf("json url = %v (%v), want %q\n%s", rep["url"], err, c.shown, r)
			}
			secNoSecret(t, r)
		}
		// From IDMPCTL_URL it is not on the command line: no warning, and
		// still redacted.
		r := cli.With("IDMPCTL_URL=redis://:"+secPassword+"@"+srv.Addr+"/0").Run("inspect", "--server")
		secWant(t, r, 0)
		if r.Stderr != "" {
			t.Errorf("a password from IDMPCTL_URL warns:\n%s", r)
		}
		secNoSecret(t, r)
		// Redacted in failures too.
		for _, c := range []struct {
			url  string
			code int
			args []string
		}{
			{"redis://:" + secPassword + "@127.0.0.1:1/0", 69, []string{"inspect", "--server"}},
			{"redis://reader:" + secPassword + "@" + srv.Addr + "/0", 77, []string{"claim", "acquire", "k"}},
			{"redis://reader:" + secReaderPassword + "@" + srv.Addr + "/0", 77, []string{"xadd", "s", "--pid", "p", "--iid", "i", "f", "v"}},
			{"rediss://:" + secPassword + "@" + tlsSrv.TLSAddr + "/0", 78, []string{"inspect", "--server", "--tls-ca", files.CA}},
			{"http://:" + secPassword + "@" + srv.Addr + "/0", 78, []string{"inspect", "--server"}},
			{"redis://:" + secPassword + "@" + srv.Addr + "/notadb", 78, []string{"inspect", "--server"}},
		} {
			r := cli.Run(append(c.args, "--url", c.url)...)
			if r.Code != c.code {
				t.Errorf("exit %d, want %d\n%s", r.Code, c.code, r)
			}
			secNoSecret(t, r)
		}
	})
}

// TestSecretNotInProcessArgs reads the command line of a running idmpctl
// the way ps does: a password from the environment is not there; one in
// --url is, which is why idmpctl warns about it.
func TestSecretNotInProcessArgs(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	srv := redistest.NewWith(t, redistest.Options{Config: []string{"requirepass " + secPassword}})
	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		inArgs bool
	}{
		{"IDMPCTL_PASSWORD", []string{"IDMPCTL_URL=" + srv.URL, "IDMPCTL_PASSWORD=" + secPassword}, nil, false},
		{"REDISCLI_AUTH", []string{"IDMPCTL_URL=" + srv.URL, "REDISCLI_AUTH=" + secPassword}, nil, false},
		{"IDMPCTL_URL", []string{"IDMPCTL_URL=redis://:" + secPassword + "@" + srv.Addr + "/0"}, nil, false},
		{"--url", nil, []string{"--url", "redis://:" + secPassword + "@" + srv.Addr + "/0"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			key := "ps:" + c.name
			args := append([]string{"claim", "run", key}, c.args...)
			args = append(args, "--", "sleep", "3")
			p := clitest.New(t, c.env...).Start(args...)
			// Wait until the claim is held: idmpctl has connected and runs
			// the command.
			deadline := time.Now().Add(20 * time.Second)
			for secServerSays(t, srv.Addr, "default", secPassword, "HGET", key, "status") != "PROCESSING" {
				if time.Now().After(deadline) {
					_ = p.Kill()
					t.Fatalf("the claim was never taken: %s", p.Wait(time.Minute))
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid()))
			if err != nil {
				t.Fatal(err)
			}
			shown := strings.ReplaceAll(string(cmdline), "\x00", " ")
			if !strings.HasPrefix(shown, "idmpctl claim run "+key) {
				t.Errorf("cmdline %q is not idmpctl's", shown)
			}
			if got := strings.Contains(shown, secPassword); got != c.inArgs {
				t.Errorf("password in the command line (ps) = %v, want %v: %q", got, c.inArgs, shown)
			}
			// Nor in the command it runs.
			for _, child := range secChildren(p.Pid()) {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); err == nil && strings.Contains(string(b), secPassword) {
					t.Errorf("password in the command line of child %d: %q", child, b)
				}
			}
			r := p.Wait(time.Minute)
			if r.Code != 0 {
				t.Errorf("claim run: %s", r)
			}
			warned := strings.Contains(r.Stderr, "a password in --url is visible to other users")
			if warned != c.inArgs {
				t.Errorf("warning = %v, want %v: %q", warned, c.inArgs, r.Stderr)
			}
			if strings.Contains(r.Stdout+r.Stderr, secPassword) {
				t.Errorf("password printed: %q %q", r.Stdout, r.Stderr)
			}
		})
	}
}

// secChildren lists the pids whose parent is pid (from /proc/*/stat).
func secChildren(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				kids = append(kids, n)
			}
		}
	}
	return kids
}
