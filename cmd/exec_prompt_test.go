package cmd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/resp"
)

// The prompt follows what redis-cli's follows: SELECT (once accepted,
// outside a transaction), MULTI, EXEC and DISCARD (whatever their reply),
// RESET.
func TestPromptState(t *testing.T) {
	s := promptState{addr: "127.0.0.1:6379"}
	ok, bad := resp.Reply{Kind: resp.Status, Str: "OK"}, resp.ErrorOf("ERR DB index is out of range")
	steps := []struct {
		args []string
		r    resp.Reply
		want string
	}{
		{[]string{"PING"}, ok, "127.0.0.1:6379> "},
		{[]string{"select", "3"}, ok, "127.0.0.1:6379[3]> "},
		{[]string{"SELECT", "99"}, bad, "127.0.0.1:6379[3]> "},
		{[]string{"MULTI"}, ok, "127.0.0.1:6379[3](TX)> "},
		{[]string{"SELECT", "0"}, resp.Reply{Kind: resp.Status, Str: "QUEUED"}, "127.0.0.1:6379[3](TX)> "},
		{[]string{"EXEC"}, bad, "127.0.0.1:6379[3]> "},
		{[]string{"MULTI"}, ok, "127.0.0.1:6379[3](TX)> "},
		{[]string{"discard"}, ok, "127.0.0.1:6379[3]> "},
		{[]string{"RESET"}, resp.Reply{Kind: resp.Status, Str: "RESET"}, "127.0.0.1:6379> "},
	}
	for _, st := range steps {
		s.note(st.args, st.r)
		if got := s.String(); got != st.want {
			t.Errorf("after %q: %q, want %q", st.args, got, st.want)
		}
	}
	if got := (promptState{addr: "/run/redis.sock", unix: true, db: 1}).String(); got != "redis /run/redis.sock[1]> " {
		t.Errorf("unix socket: %q", got)
	}
}

// plainLines echoes each line after its prompt, as a terminal shows it,
// and ends with io.EOF; a last line without a newline is still a line.
func TestPlainLines(t *testing.T) {
	var out bytes.Buffer
	l := &plainLines{rd: bufioReader("PING\r\nGET k"), out: &out}
	for _, want := range []string{"PING", "GET k"} {
		if got, err := l.ReadLine("> "); got != want || err != nil {
			t.Fatalf("ReadLine = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := l.ReadLine("> "); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
	if got := out.String(); got != "> PING\n> GET k\n> \n" {
		t.Errorf("shown: %q", got)
	}
}

func TestPromptHelp(t *testing.T) {
	if got := promptHelp([]string{"xadd"}); !strings.HasPrefix(got, "XADD key [NOMKSTREAM]") {
		t.Errorf("help xadd: %q", got)
	}
	if got := promptHelp([]string{"get"}); got != "GET goes to the server as it is: COMMAND DOCS GET describes it.\n" {
		t.Errorf("help get: %q", got)
	}
	if got := promptHelp(nil); !strings.Contains(got, "quit, exit     leave (also Ctrl-D)") {
		t.Errorf("help: %q", got)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
