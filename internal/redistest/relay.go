package redistest

import (
	"errors"
	"net"
	"sync"
	"testing"
)

// Relay forwards loopback TCP connections to a server. Freeze partitions
// its clients from the server, like a path that silently drops packets
// (connections stay open, new ones are accepted, bytes wait); Thaw
// delivers what waited. Clients connected directly are not affected.
type Relay struct {
	Addr string // 127.0.0.1:port
	URL  string // redis://127.0.0.1:port/0

	network, target string
	ln              net.Listener

	mu     sync.Mutex
	thawed *sync.Cond
	frozen bool
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewRelay listens on a free loopback port and forwards each connection to
// srv, for one test: closed when the test ends.
func NewRelay(t testing.TB, srv *Server) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{network: "tcp", target: srv.Addr, ln: ln, conns: map[net.Conn]struct{}{}}
	if srv.Opts.Unix {
		r.network = "unix"
	}
	r.thawed = sync.NewCond(&r.mu)
	r.Addr = ln.Addr().String()
	r.URL = "redis://" + r.Addr + "/0"
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial(r.network, r.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !r.track(client, server) {
			return
		}
		r.wg.Add(2)
		go r.pipe(server, client)
		go r.pipe(client, server)
	}
}

// track registers a connection pair, unless the relay is closed.
func (r *Relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst, holding what it read while the relay is frozen.
func (r *Relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !r.waitThawed() {
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	// One side ended: end the other too, as a connection would.
	_ = dst.Close()
	_ = src.Close()
	r.mu.Lock()
	delete(r.conns, dst)
	delete(r.conns, src)
	r.mu.Unlock()
}

// waitThawed blocks while the relay is frozen; false once it is closed.
func (r *Relay) waitThawed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.frozen && !r.closed {
		r.thawed.Wait()
	}
	return !r.closed
}

// Freeze stops forwarding: nothing reaches the server or comes back until
// Thaw. Connections stay open.
func (r *Relay) Freeze() {
	r.mu.Lock()
	r.frozen = true
	r.mu.Unlock()
}

// Thaw forwards again, first what waited.
func (r *Relay) Thaw() {
	r.mu.Lock()
	r.frozen = false
	r.thawed.Broadcast()
	r.mu.Unlock()
}

// Close stops the relay and closes every connection through it.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.thawed.Broadcast()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
