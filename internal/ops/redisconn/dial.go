package redisconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/resp"
	"github.com/redis/go-redis/v9"
)

// helloRESP2 is the handshake go-redis sends on every new connection with
// Protocol 2 and no credentials or client name: HELLO 2.
var helloRESP2 = []byte("*2\r\n$5\r\nhello\r\n$1\r\n2\r\n")

// helloReply answers it: RESP2 is what a fresh connection speaks already.
var helloReply = []byte("*2\r\n$5\r\nproto\r\n:2\r\n")

// dialer connects like go-redis's own, says "connect URL" in its errors,
// and answers a bare HELLO 2 itself: it only confirms RESP2, at the cost of
// a round trip, half a single add's. Over TLS it goes: a refused client
// certificate shows only in an alert that a read sees.
func dialer(opt *redis.Options, display string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nd := &net.Dialer{Timeout: opt.DialTimeout}
		var conn net.Conn
		var err error
		if opt.TLSConfig != nil {
			conn, err = dialTLS(ctx, nd, opt.TLSConfig, network, addr)
		} else if conn, err = nd.DialContext(ctx, network, addr); err == nil {
			conn = &helloShim{prefixConn: prefixConn{Conn: conn}}
		}
		if err != nil {
			return nil, schemeHint(exit.Connect(err, display), err, opt)
		}
		return conn, nil
	}
}

// dialTLS dials and completes the handshake. In TLS 1.3 a client that
// writes first meets a reset instead of the server's certificate verdict,
// so when one was asked for, it is awaited as long as the handshake took.
func dialTLS(ctx context.Context, nd *net.Dialer, base *tls.Config, network, addr string) (net.Conn, error) {
	cfg := base.Clone()
	var asked atomic.Bool
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked.Store(true)
		if base.GetClientCertificate != nil {
			return base.GetClientCertificate(cri)
		}
		if len(base.Certificates) > 0 {
			return &base.Certificates[0], nil
		}
		return &tls.Certificate{}, nil
	}
	start := time.Now()
	conn, err := (&tls.Dialer{NetDialer: nd, Config: cfg}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := conn.(*tls.Conn)
	if !asked.Load() || tc.ConnectionState().Version < tls.VersionTLS13 {
		return tc, nil
	}
	wait := max(time.Since(start), 5*time.Millisecond)
	_ = tc.SetReadDeadline(time.Now().Add(wait))
	var first [1]byte
	n, err := tc.Read(first[:])
	_ = tc.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case n > 0: // not expected of Redis: keep it for the client
		return &prefixConn{Conn: tc, prefix: first[:1]}, nil
	case err != nil && !(errors.As(err, &ne) && ne.Timeout()):
		tc.Close()
		return nil, err
	}
	return tc, nil
}

// prefixConn reads prefix before the connection's own bytes.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// helloShim answers the first write when it is exactly helloRESP2.
type helloShim struct {
	prefixConn // the answer
	written    bool
}

func (h *helloShim) Write(b []byte) (int, error) {
	if !h.written {
		h.written = true
		if bytes.HasPrefix(b, helloRESP2) {
			h.prefix = helloReply
			rest := b[len(helloRESP2):]
			if len(rest) == 0 {
				return len(b), nil
			}
			n, err := h.Conn.Write(rest)
			return n + len(helloRESP2), err
		}
	}
	return h.Conn.Write(b)
}

// connHook makes a refused handshake, or a network failure before any
// reply, read "connect URL: why", whichever command met it.
type connHook struct {
	display string
	opt     *redis.Options
	replied atomic.Bool
}

func (h *connHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *connHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if w := h.settle(err); w != err {
			cmd.SetErr(w)
			return w
		}
		return err
	}
}

func (h *connHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if w := h.settle(cmd.Err()); w != cmd.Err() {
				cmd.SetErr(w)
			}
		}
		return h.settle(err)
	}
}

// settle returns err, or err as a connect error.
func (h *connHook) settle(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		h.replied.Store(true)
		return err
	}
	if strings.Contains(err.Error(), "Protocol error: unauthenticated") {
		// Redis 7.4+ closes a connection without a user on its first
		// command of more than 10 arguments or 16 KiB, before it could
		// answer NOAUTH (the HELLO that would have asked is answered here).
		err = resp.ReplyError("NOAUTH Authentication required.")
	}
	var e *exit.Error
	switch {
	case errors.As(err, &e):
		return err // a dial error, told already
	case exit.Classify(err) == exit.Permission && isHandshake(err):
		return exit.Connect(err, h.display)
	case exit.Classify(err) == exit.Unavailable && !h.replied.Load():
		return schemeHint(exit.Connect(err, h.display), err, h.opt)
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		h.replied.Store(true)
		if msg, ok := ownError(err.Error()); ok {
			return resp.ReplyError(msg)
		}
	}
	return err
}

// isHandshake reports an error of authentication: the connection's, not the
// command's (NOPERM is the command's).
func isHandshake(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "WRONGPASS") ||
		strings.Contains(msg, "failed to authenticate")
}
