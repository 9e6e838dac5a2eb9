//go:build unix

package redistest

import (
	"errors"
	"os"
	"syscall"
)

// Freeze stops the server with SIGSTOP: its sockets stay open and the kernel
// still accepts connections, but nothing is answered, like a hung host.
// Pair it with a t.Cleanup that calls Thaw.
func (s *Server) Freeze() error { return s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT). Thawing a running server is a
// no-op, and so is thawing one that has exited (never a reused pid).
func (s *Server) Thaw() error {
	if err := s.signal(syscall.SIGCONT); !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("redistest: server not started")
	}
	select {
	case <-s.done:
		return os.ErrProcessDone
	default:
	}
	return s.cmd.Process.Signal(sig)
}
