// Package redisconn reaches a Redis server the way the user asked: URL,
// password, TLS, cluster detection, timeouts, the retry policy for
// idempotent operations, Lua script loading, and what the server is
// (version, mode, native IDMP). It knows nothing of streams, claims or
// records, and it never prints: packages stream, claim and keyspace build on
// it, and cmd hands their results to internal/render.
package redisconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

func init() { redis.SetLogger(silentLogger{}) }

// silentLogger keeps go-redis from writing to stderr: errors reach the user
// through idmpctl's own error line.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}

// DefaultURL is used when neither --url nor IDMPCTL_URL nor REDIS_URL is set.
const DefaultURL = "redis://127.0.0.1:6379/0"

// ConnConfig is everything needed to reach a server, as the user gave it.
type ConnConfig struct {
	URL         string
	URLFromFlag bool   // the URL came from --url (visible in ps)
	Password    string // from IDMPCTL_PASSWORD or REDISCLI_AUTH; the URL's wins
	TLSCA       string
	TLSCert     string
	TLSKey      string
	TLSInsecure bool
	Timeout     time.Duration
	Cluster     bool // forced with --cluster; otherwise detected
	// PasswordNotNeeded hears, once per connection and from any goroutine,
	// of a server that asks for no password: it goes on, as redis-cli does.
	PasswordNotNeeded func(error)
}

// Conn is a client for the server the user named, and what was learned of
// it. Only the commands that need Capabilities ask, so a single add or
// claim costs one round trip after connect.
type Conn struct {
	Display  string        // the URL with any password redacted
	Timeout  time.Duration // per-command bound
	Warnings []string      // for the caller to show on stderr

	opt               *redis.Options
	db                int         // the URL's database (opt.DB is 0 where OnConnect selects it)
	passwordNotNeeded func(error) // ConnConfig's (never nil)

	mu      sync.Mutex
	client  redis.UniversalClient
	cluster bool          // client is a cluster client (forced, probed or redirected)
	caps    *Capabilities // probed, once

	waitOK map[waitProbe]bool // the primaries that answered a WAIT, or WAITAOF, probe (see CheckDurable)

	// WatchEviction: single adds read the eviction settings in their round trip.
	WatchEviction bool
	eviction      evictionCache
	maxBulk       int64 // proto-max-bulk-len (see ProtoMaxBulkLen)
	maxBulkRead   bool
}

// Capabilities is what the probe learned about the server.
type Capabilities struct {
	Product    string // "redis" or "valkey"
	Version    string
	Mode       string // standalone, cluster, sentinel (HELLO's mode)
	Cluster    bool
	NativeIDMP bool // Redis 8.6+, or COMMAND INFO XCFGSET is known
}

// Close releases the client.
func (c *Conn) Close() error { return c.Client().Close() }

// Client is the client to send commands with: a cluster client once the
// server is known to be a cluster node.
func (c *Conn) Client() redis.UniversalClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// Cluster reports whether commands go through the Redis Cluster protocol.
func (c *Conn) Cluster() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cluster
}

// useCluster switches to a cluster client (the server is a cluster node).
func (c *Conn) useCluster() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cluster {
		return
	}
	old := c.client
	c.client, c.cluster = c.clusterClient(), true
	_ = old.Close()
}

func (c *Conn) clusterClient() *redis.ClusterClient {
	cc := redis.NewClusterClient(clusterOptions(c.opt))
	cc.AddHook(&connHook{display: c.Display, opt: c.opt})
	return cc
}

// Do runs op with the client. A plain client that reached a cluster node
// (MOVED, ASK, CROSSSLOT: nothing ran) switches to a cluster client and
// runs op once more. Scans must ask Capabilities first.
func (c *Conn) Do(op func(redis.UniversalClient) error) error {
	err := op(c.Client())
	if err != nil && !c.Cluster() && clusterReply(err) {
		c.useCluster()
		err = op(c.Client())
	}
	return err
}

// clusterReply reports a reply only a cluster node gives a plain client.
func clusterReply(err error) bool {
	msg := err.Error()
	for _, p := range []string{"MOVED ", "ASK ", "CROSSSLOT "} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, ": "+p) {
			return true
		}
	}
	return false
}

// Ctx bounds one command by the configured timeout.
func (c *Conn) Ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, c.Timeout)
}

var urlPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|//)([^:/@]*:)[^@/]*@`) })

// Redact hides the password in a URL, also in one that does not parse.
func Redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
		return raw
	}
	return urlPassword().ReplaceAllString(raw, "${1}${2}xxxxx@")
}

// urlProblem says what is wrong with a URL in the user's words (the
// parser's may hold the password).
func urlProblem(raw string, err error) string {
	msg := err.Error()
	scheme, _, hasScheme := strings.Cut(raw, "://")
	switch {
	case !hasScheme && !strings.HasPrefix(raw, "unix:"):
		return "no scheme: write redis://" + strings.TrimPrefix(Redact(raw), "//")
	case strings.Contains(msg, "invalid URL scheme"):
		return fmt.Sprintf("scheme %q: want redis, rediss or unix", scheme)
	case strings.Contains(msg, "invalid database number"):
		return "the database is not a number: end the URL with /0 (or ?db=0 for unix://)"
	case strings.Contains(msg, "missing ']'"):
		return "an IPv6 address needs its closing ']': redis://[::1]:6379"
	case strings.Contains(msg, "invalid port"):
		return "the port is not a number: redis://host:6379"
	}
	// Another parse error: the parser's reason, without the URL it quotes.
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return strings.TrimPrefix(strings.ReplaceAll(msg, raw, Redact(raw)), "redis: ")
}

// Options turns the config into client options without touching the
// network; failures are configuration errors (78).
func (cfg ConnConfig) Options() (*redis.Options, []string, error) {
	display := Redact(cfg.URL)
	opt, err := redis.ParseURL(cfg.URL)
	if err == nil && opt.Network == "tcp" {
		// The parser takes any number for a port; the dialer's "invalid
		// port" would read as an unreachable server (69), not a bad URL.
		if _, port, perr := net.SplitHostPort(opt.Addr); perr == nil {
			if n, perr := strconv.Atoi(port); perr == nil && (n < 1 || n > 65535) {
				err = fmt.Errorf("port %d is out of range: want 1 to 65535", n)
			}
		}
	}
	if err != nil {
		e := exit.New(exit.Config, "bad URL "+strconv.Quote(display), "%s", urlProblem(cfg.URL, err))
		e.Hint = "use redis://[user[:password]@]host[:port][/db], rediss:// for TLS, or unix:///path/to/socket"
		return nil, nil, e
	}
	var warnings []string
	if opt.Password != "" && cfg.URLFromFlag {
		warnings = append(warnings, "a password in --url is visible to other users (ps, shell history); use IDMPCTL_PASSWORD or REDISCLI_AUTH")
	}
	if opt.Password == "" && cfg.Password != "" {
		opt.Password = cfg.Password
	}
	switch {
	case opt.Username != "" && opt.Password == "":
		// go-redis sends no AUTH without a password: the default user's
		// rights, silently. AUTH user "" works for nopass, else 77.
		user := opt.Username
		opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "AUTH", user, "").Err() }
	case opt.Username == "" && opt.Password != "":
		// AUTH PASSWORD, as redis-cli and idmpctl's own connections send it
		// (go-redis's HELLO AUTH passes silently on a server without one,
		// where those fail): refused there, it goes on with a warning.
		// go-redis would SELECT before OnConnect's AUTH: OnConnect does.
		opt.CredentialsProvider = func() (string, string) { return "", "" }
		opt.OnConnect = authPassword(opt.Password, opt.DB, cfg.PasswordNotNeeded)
		opt.DB = 0
	}
	tlsFlags := cfg.TLSCA != "" || cfg.TLSCert != "" || cfg.TLSKey != "" || cfg.TLSInsecure
	if tlsFlags && opt.TLSConfig == nil {
		return nil, nil, exit.New(exit.Config, "TLS options", "%s is not a rediss:// URL", strconv.Quote(display))
	}
	if opt.TLSConfig != nil {
		if err := cfg.applyTLS(opt.TLSConfig); err != nil {
			return nil, nil, err
		}
		if cfg.TLSInsecure {
			warnings = append(warnings, "--tls-insecure: the server's certificate is not verified")
		}
	}
	t := cfg.Timeout
	if t <= 0 {
		t = 5 * time.Second
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = t, t, t
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1 // idmpctl decides what is safe to retry
	opt.DisableIdentity = true
	// RESP2: what redis-cli speaks, and a new connection needs no HELLO for
	// it (see dialer).
	opt.Protocol = 2
	opt.PoolSize = 8
	// Pipelines on the same pool as other commands: go-redis v9.23's own
	// pipeline pool made a single add that goes on after a MULTI/EXEC (on
	// a server without IDMP) dial a second connection, measured at +16%
	// of the server's CPU for the add.
	opt.PipelinePoolSize = -1
	opt.DialerRetries = 1
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return opt, warnings, nil
}

func (cfg ConnConfig) applyTLS(tc *tls.Config) error {
	if cfg.TLSCA != "" {
		pem, err := os.ReadFile(cfg.TLSCA)
		if err != nil {
			return exit.New(exit.Config, "read --tls-ca", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return exit.New(exit.Config, "read --tls-ca", "%s holds no PEM certificate", cfg.TLSCA)
		}
		tc.RootCAs = pool
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return exit.New(exit.Config, "TLS client certificate", "--tls-cert and --tls-key go together")
	}
	if cfg.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return exit.New(exit.Config, "read --tls-cert/--tls-key", "%v", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tc.InsecureSkipVerify = cfg.TLSInsecure
	return nil
}

// Open makes a client for cfg without touching the network: a cluster
// client with --cluster, a plain one otherwise (switched when need be).
func Open(cfg ConnConfig) (*Conn, error) {
	opt, warnings, err := cfg.Options()
	if err != nil {
		return nil, err
	}
	c := &Conn{Display: Redact(cfg.URL), Timeout: opt.ReadTimeout, Warnings: warnings, opt: opt, passwordNotNeeded: func(error) {}, waitOK: map[waitProbe]bool{}}
	if u, err := redis.ParseURL(cfg.URL); err == nil {
		c.db = u.DB // opt.DB may be 0, the SELECT left to OnConnect
	}
	if cfg.PasswordNotNeeded != nil {
		c.passwordNotNeeded = cfg.PasswordNotNeeded
	}
	opt.Dialer = dialer(opt, c.Display)
	if cfg.Cluster {
		c.client, c.cluster = c.clusterClient(), true
	} else {
		rc := redis.NewClient(opt)
		rc.AddHook(&connHook{display: c.Display, opt: opt})
		c.client = rc
	}
	return c, nil
}

// Capabilities asks the server what it is, once: version, mode (a cluster
// node switches the client to a cluster client) and native IDMP.
func (c *Conn) Capabilities(ctx context.Context) (Capabilities, error) {
	if known, ok := c.KnownCapabilities(); ok {
		return known, nil
	}
	caps, err := probe(ctx, c.Client(), c.Timeout)
	if err != nil {
		var e *exit.Error
		if errors.As(err, &e) {
			return Capabilities{}, err // a dial error says "connect" already
		}
		return Capabilities{}, schemeHint(exit.Connect(err, c.Display), err, c.opt)
	}
	c.setCaps(caps)
	return caps, nil
}

// KnownCapabilities is what Capabilities or LearnHello learned, if any.
func (c *Conn) KnownCapabilities() (Capabilities, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps == nil {
		return Capabilities{}, false
	}
	return *c.caps, true
}

func (c *Conn) setCaps(caps Capabilities) {
	if caps.Cluster {
		c.useCluster()
	}
	c.mu.Lock()
	c.caps = &caps
	c.mu.Unlock()
}

// schemeHint names scheme mix-ups: a TLS port given redis:// drops the
// connection (EOF), a plain port given rediss:// never answers (a timeout).
func schemeHint(wrapped, err error, opt *redis.Options) error {
	if opt.Network != "tcp" || exit.Code(wrapped) != exit.Unavailable {
		return wrapped
	}
	msg := err.Error()
	switch {
	case opt.TLSConfig == nil && (msg == "EOF" || strings.HasSuffix(msg, ": EOF") || errors.Is(err, syscall.ECONNRESET)):
		return exit.WithHint(wrapped, "the server closed the connection at once: if this port speaks TLS, use rediss://")
	case opt.TLSConfig != nil && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "i/o timeout")):
		return exit.WithHint(wrapped, "no answer to the TLS handshake: is the server running, and does this port speak TLS? (a plain port takes redis://; --timeout bounds the wait)")
	}
	return wrapped
}

// authPassword sends AUTH password, then SELECT db (see Options); a
// refusal for want of a password goes to notNeeded (if any), and on.
func authPassword(password string, db int, notNeeded func(error)) func(context.Context, *redis.Conn) error {
	return func(ctx context.Context, cn *redis.Conn) error {
		err := cn.Do(ctx, "AUTH", password).Err()
		switch {
		case err != nil && PasswordNotNeeded(err):
			if notNeeded != nil {
				notNeeded(err)
			}
		case err != nil:
			return err
		}
		if db != 0 {
			return cn.Do(ctx, "SELECT", db).Err()
		}
		return nil
	}
}

// PasswordNotNeeded reports the server's refusal of AUTH PASSWORD when it
// asks for no password at all: Redis 6 and later (and Valkey) say "AUTH
// <password> called without any password configured for the default user",
// older ones "Client sent AUTH, but no password is set".
func PasswordNotNeeded(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "called without any password configured") || strings.Contains(msg, "but no password is set")
}

// NotePasswordNotNeeded tells ConnConfig.PasswordNotNeeded of a pipe's
// connection to a server that asks for no password.
func (c *Conn) NotePasswordNotNeeded(err error) { c.passwordNotNeeded(err) }

func clusterOptions(o *redis.Options) *redis.ClusterOptions {
	return &redis.ClusterOptions{
		OnConnect:                o.OnConnect,
		CredentialsProvider:      o.CredentialsProvider,
		Addrs:                    []string{o.Addr},
		Username:                 o.Username,
		Password:                 o.Password,
		TLSConfig:                o.TLSConfig,
		DialTimeout:              o.DialTimeout,
		ReadTimeout:              o.ReadTimeout,
		WriteTimeout:             o.WriteTimeout,
		ContextTimeoutEnabled:    true,
		MaxRetries:               -1,
		MaxRedirects:             8,
		DisableIdentity:          true,
		Protocol:                 o.Protocol,
		Dialer:                   o.Dialer,
		PoolSize:                 o.PoolSize,
		PipelinePoolSize:         o.PipelinePoolSize,
		DialerRetries:            o.DialerRetries,
		MaintNotificationsConfig: o.MaintNotificationsConfig,
	}
}

// probe learns what the server is from HELLO 2 (cheaper than INFO, and
// every user may send it); where HELLO is refused (renamed away, or
// before Redis 6) from INFO server, else PING proves it, unknown.
func probe(ctx context.Context, client redis.UniversalClient, timeout time.Duration) (Capabilities, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hello := client.Do(ctx, "HELLO", "2")
	fields := helloFields(hello)
	var reply redis.Error
	if err := hello.Err(); err != nil && !errors.As(err, &reply) {
		return Capabilities{}, err
	} else if err != nil {
		info, ierr := client.Info(ctx, "server").Result()
		if ierr != nil {
			if perr := client.Ping(ctx).Err(); perr != nil {
				return Capabilities{}, perr
			}
		}
		m := ParseInfo(info)
		fields = map[string]string{"server": m["server_name"], "version": cmp.Or(m["valkey_version"], m["redis_version"]), "mode": m["redis_mode"]}
	}
	caps, sure := capsOf(fields)
	// Native IDMP is known by its command where the version does not say.
	if !sure {
		if vals, err := client.Do(ctx, "COMMAND", "INFO", "XCFGSET").Slice(); err == nil && len(vals) > 0 && vals[0] != nil {
			caps.NativeIDMP = true
		}
	}
	return caps, nil
}

// capsOf reads HELLO's fields; sure is false when the version does not
// settle native IDMP (then COMMAND INFO XCFGSET asks).
func capsOf(hello map[string]string) (caps Capabilities, sure bool) {
	caps = Capabilities{Product: cmp.Or(hello["server"], "redis"), Version: hello["version"],
		Mode: cmp.Or(hello["mode"], "standalone")}
	caps.Cluster = caps.Mode == "cluster"
	_, known := ParseVersion(caps.Version)
	may := mayHaveIDMP(caps)
	caps.NativeIDMP = known && may && caps.Product == "redis"
	return caps, caps.NativeIDMP || !may
}

// helloFields reads a HELLO 2 reply (none for an error).
func helloFields(cmd *redis.Cmd) map[string]string {
	fields := map[string]string{}
	hello, _ := cmd.Val().([]any)
	for i := 0; i+1 < len(hello); i += 2 {
		k, _ := hello[i].(string)
		v, _ := hello[i+1].(string)
		fields[k] = v
	}
	return fields
}

// QueueHello adds HELLO 2 to a round trip the caller makes anyway; what it
// returns learns its reply, as Capabilities would. Its error is the round
// trip's or the user's refusal; a refused HELLO is left to Capabilities.
func (c *Conn) QueueHello(ctx context.Context, p redis.Pipeliner) func() error {
	cmd := redis.NewCmd(ctx, "hello", "2")
	_ = p.Process(ctx, cmd)
	return func() error {
		err := cmd.Err()
		switch {
		case err == nil:
			c.LearnHello(helloFields(cmd))
		case !errors.As(err, new(redis.Error)) || exit.Classify(err) == exit.Permission:
			return err
		}
		return nil
	}
}

// LearnHello learns what the server is from exec's HELLO reply; false when
// that does not settle native IDMP.
func (c *Conn) LearnHello(fields map[string]string) bool {
	caps, sure := capsOf(fields)
	if sure {
		c.setCaps(caps)
	}
	return sure
}

// mayHaveIDMP is false only for versions known to lack XCFGSET: Redis
// before 8.6 and Valkey before 9. Unknown versions are asked.
func mayHaveIDMP(c Capabilities) bool {
	v, ok := ParseVersion(c.Version)
	switch {
	case !ok:
		return true
	case c.Product == "valkey":
		return v[0] >= 9
	}
	return slices.Compare(v[:2], []int{8, 6}) >= 0
}

// ParseVersion reads "8.6.2" (or "8.6", "8.6.1-rc1": the digits before
// anything else) as major, minor, patch.
func ParseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return v, false
	}
	for i, p := range parts {
		end := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			p = p[:end]
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// VersionAtLeast reports whether version (ParseVersion) is want or later.
func VersionAtLeast(version string, want ...int) bool {
	v, ok := ParseVersion(version)
	return ok && slices.Compare(v[:len(want)], want) >= 0
}

// ParseInfo reads an INFO reply into field -> value.
func ParseInfo(s string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// Pipelined runs one pipeline under the per-command timeout; it returns
// only a failure of the round trip (commands keep their own errors).
func (c *Conn) Pipelined(ctx context.Context, fn func(p redis.Pipeliner, ctx context.Context)) error {
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	cmds, err := c.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		fn(p, ctx)
		return nil
	})
	if err == nil || len(cmds) == 0 {
		return err
	}
	// Pipelined reports the first failed command; a reply error from the
	// server (WRONGTYPE, a nil) belongs to its command, anything else to all.
	var rerr redis.Error
	if errors.As(err, &rerr) || errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// EachPrimary runs fn on every primary, concurrently (fn synchronises), or
// once on a single server (addr "").
func (c *Conn) EachPrimary(ctx context.Context, fn func(ctx context.Context, node redis.Cmdable, addr string) error) error {
	if cc, ok := c.Client().(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n, n.Options().Addr) })
	}
	return fn(ctx, c.Client(), "")
}
