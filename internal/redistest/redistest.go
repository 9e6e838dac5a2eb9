// Package redistest starts real redis-server processes for tests: one per
// test or script, on a unix socket or a free loopback port, stopped when the
// test ends. No mocks: every test talks to a real server.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Binary is the server binary: $IDMPCTL_TEST_REDIS_SERVER (for example a
// Redis 8.6 or valkey-server build) or redis-server from PATH.
func Binary() string {
	if b := os.Getenv("IDMPCTL_TEST_REDIS_SERVER"); b != "" {
		return b
	}
	return "redis-server"
}

// NativeBinary is a redis-server with native IDMP for the tests that need
// one beside the server under test: $IDMPCTL_TEST_NATIVE_SERVER, else the
// server under test when it is Redis 8.6+, else the cached 8.6.3, else "".
func NativeBinary() string {
	if b := os.Getenv("IDMPCTL_TEST_NATIVE_SERVER"); b != "" {
		return b
	}
	if AtLeast(8, 6) && !IsValkey() {
		return Binary()
	}
	return cached("bin", "redis-server")
}

// NativeStreamTests is Redis 8.6.3's own tests/unit/type/stream.tcl, from
// the source tree scripts/install-redis.sh caches beside its build
// ($REDIS86_DIR/tests), or "" when it is not there.
func NativeStreamTests() string { return cached("tests", "unit", "type", "stream.tcl") }

// cached is a file of the Redis 8.6.3 that scripts/install-redis.sh caches
// in $REDIS86_DIR, else ~/.cache/idmpctl/redis-8.6.3; "" when it is not there.
func cached(path ...string) string {
	dir := os.Getenv("REDIS86_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(cache, "idmpctl", "redis-8.6.3")
	}
	f := filepath.Join(append([]string{dir}, path...)...)
	if _, err := os.Stat(f); err != nil {
		return ""
	}
	return f
}

// Options says how to start a server.
type Options struct {
	Dir    string   // working directory (data, logs, socket); required
	Unix   bool     // listen on Dir/redis.sock only; otherwise a free loopback port
	Port   int      // a fixed port (restart on the same port); 0 picks a free one
	AOF    bool     // appendonly yes, appendfsync always: every acknowledged write survives kill -9
	Config []string // extra config lines, e.g. "requirepass s3cret"

	// Binary is the server to run: "" is Binary(), the server under test;
	// NativeBinary() starts a native-IDMP server beside it.
	Binary string

	// TLS, when set, makes the server speak TLS only, on a free loopback
	// port (TLSPort); Unix is implied: the plain side is the unix socket,
	// which Do and the start-up PING use. Config lines come after the TLS ones.
	TLS *TLSOptions
}

// Server is a running redis-server.
type Server struct {
	Opts Options
	Addr string // host:port, or the socket path
	URL  string // redis://127.0.0.1:port/0 or unix:///path

	// With Options.TLS: the TLS port, 127.0.0.1:port and rediss://127.0.0.1:port/0.
	TLSPort int
	TLSAddr string
	TLSURL  string

	cmd  *exec.Cmd
	done chan struct{}
}

// Start launches redis-server and waits until it answers PING.
func Start(opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("redistest: Options.Dir is required")
	}
	if opts.TLS != nil {
		if opts.TLS.Files == nil {
			return nil, errors.New("redistest: TLSOptions.Files is required")
		}
		opts.Unix = true
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{Opts: opts}
	conf := []string{"dir " + opts.Dir, `save ""`, "logfile " + filepath.Join(opts.Dir, "redis.log"), "daemonize no", "appendonly no"}
	if opts.AOF {
		conf = append(conf[:4], "appendonly yes", "appendfsync always")
	}
	if opts.Unix {
		sock := filepath.Join(opts.Dir, "redis.sock")
		if len(sock) > 100 { // sun_path is 108 bytes
			d, err := os.MkdirTemp("", "rs")
			if err != nil {
				return nil, err
			}
			sock = filepath.Join(d, "redis.sock")
		}
		conf = append(conf, "port 0", "unixsocket "+sock, "unixsocketperm 700")
		s.Addr, s.URL = sock, "unix://"+sock
	}
	// A port free a moment ago can be taken by a parallel test's server
	// before this one binds it: pick another and try again.
	freePort := (!opts.Unix && opts.Port == 0) || opts.TLS != nil
	var err error
	for range 5 {
		lines := conf[:len(conf):len(conf)]
		if !opts.Unix {
			port := opts.Port
			if port == 0 {
				if port, err = FreePort(); err != nil {
					return nil, err
				}
			}
			s.Opts.Port = port
			s.Addr = "127.0.0.1:" + strconv.Itoa(port)
			s.URL = "redis://" + s.Addr + "/0"
			lines = append(lines, "bind 127.0.0.1", "port "+strconv.Itoa(port))
		}
		if opts.TLS != nil {
			var tls []string
			if tls, err = s.tlsConfig(opts.TLS); err != nil {
				return nil, err
			}
			lines = append(lines, tls...)
		}
		confPath := filepath.Join(opts.Dir, "redis.conf")
		if err = os.WriteFile(confPath, []byte(strings.Join(append(lines, opts.Config...), "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		if err = s.launch(confPath); err == nil {
			return s, nil
		}
		if !freePort || !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	return nil, err
}

// binary is the server binary this server runs.
func (s *Server) binary() string {
	if s.Opts.Binary != "" {
		return s.Opts.Binary
	}
	return Binary()
}

func (s *Server) launch(confPath string) error {
	cmd := exec.Command(s.binary(), confPath)
	cmd.Dir = s.Opts.Dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w (install redis-server)", s.binary(), err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.Opts.Dir, "redis.log"))
			return fmt.Errorf("redistest: redis-server exited: %s", tail(string(log), 600))
		default:
		}
		if reply, err := s.Do("PING"); err == nil && (reply == "PONG" || strings.HasPrefix(reply, "NOAUTH")) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Kill()
	return errors.New("redistest: redis-server did not answer PING within 10s")
}

// Restart starts the server again on the same directory and address (after
// Kill). An AOF is first repaired (redis-check-aof --fix), as an operator
// should: Redis 7.0 and Valkey 8.0 load a torn transaction "truncated" but
// keep its open MULTI, so the next EXEC applies its leftovers after a later
// restart (TestRestartTornAOF), which no client can guard against.
func (s *Server) Restart() error {
	if s.Opts.AOF {
		if err := repairAOF(s.binary(), s.Opts.Dir); err != nil {
			return err
		}
	}
	return s.launch(filepath.Join(s.Opts.Dir, "redis.conf"))
}

// repairAOF cuts a torn transaction off the AOF in dir, if there is one.
func repairAOF(server, dir string) error {
	manifest := filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest")
	if _, err := os.Stat(manifest); err != nil {
		return nil // nothing written yet
	}
	// redis-check-aof or valkey-check-aof, beside the server when it is a path.
	dir, base := filepath.Split(server)
	checker := dir + strings.TrimSuffix(base, "-server") + "-check-aof"
	cmd := exec.Command(checker, "--fix", manifest)
	cmd.Stdin = strings.NewReader("y\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redistest: %s --fix: %v\n%s", checker, err, tail(string(out), 600))
	}
	return nil
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill stops the server at once (SIGKILL) and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Stop shuts the server down (Kill).
func (s *Server) Stop() { s.Kill() }

// Do sends one command with a raw RESP client and returns the reply as text
// (errors as their message). It needs no client library, so tests of the
// client library's callers can check state independently.
func (s *Server) Do(args ...string) (string, error) {
	network := "tcp"
	if s.Opts.Unix {
		network = "unix"
	}
	c, err := net.DialTimeout(network, s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(c))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':', '-':
		return line[1:], nil
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "(nil)", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		parts := make([]string, 0, max(n, 0))
		for i := 0; i < n; i++ {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return line, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// versionText is the server binary's --version, read once.
var versionText = sync.OnceValues(func() (string, error) {
	out, err := exec.Command(Binary(), "--version").Output()
	return string(out), err
})

// Version is the server binary's version (from --version).
func Version() ([3]int, error) {
	var v [3]int
	out, err := versionText()
	if err != nil {
		return v, err
	}
	m := regexp.MustCompile(`v=(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(out)
	if m == nil {
		return v, fmt.Errorf("redistest: cannot read a version from %q", out)
	}
	for i := range 3 {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, nil
}

// AtLeast reports whether the server binary is at least major.minor.
func AtLeast(major, minor int) bool {
	v, err := Version()
	return err == nil && (v[0] > major || (v[0] == major && v[1] >= minor))
}

// IsValkey reports whether the server binary is valkey-server.
func IsValkey() bool {
	out, _ := versionText()
	return strings.Contains(strings.ToLower(out), "valkey")
}
