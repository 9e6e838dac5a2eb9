package cmd

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// A retry warning names the network's failure in our words: Go's "read
// tcp ...: i/o timeout" (seen when a relay froze mid-batch) names no flag.
func TestNetWords(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		err  error
		want string
	}{
		{timeout, "no reply within --timeout 2s"},
		{io.EOF, "the server closed the connection"},
		{errors.New("LOADING Redis is loading the dataset in memory"), "LOADING Redis is loading the dataset in memory"},
	} {
		if got := netWords(c.err, 2*time.Second); got != c.want {
			t.Errorf("netWords(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
