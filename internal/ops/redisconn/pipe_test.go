package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/idmpctl/idmpctl/internal/resp"
)

type pipeArgs struct {
	Counter string  `lua:"counter,key"`
	Val     *string `lua:"val"`
}

var pipeScript = redisconn.NewLua[pipeArgs, any](redisconn.CommandReply, "return {val, redis.call('INCR', counter), {err = 'nested'}}\n")

// A pipe authenticates, selects the URL's database and loads its scripts
// as the client would; its replies come in order, of every RESP2 kind, while
// later commands are already written.
func TestPipe(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{Dir: t.TempDir(), Config: []string{"requirepass s3cret"}})
	c, err := redisconn.Open(redisconn.ConnConfig{URL: fmt.Sprintf("redis://:s3cret@127.0.0.1:%d/3", srv.Opts.Port), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.OpenPipe(ctx, "k", "", pipeScript.Script)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	const n = 200
	val := "v"
	for i := range n {
		call := pipeScript.Call(&pipeArgs{Counter: "n", Val: &val})
		cmds := [][]any{
			{"set", "k" + strconv.Itoa(i), []byte("x\r\ny")}, // +OK, a value with CRLF in it
			{"get", "k" + strconv.Itoa(i)},                   // $
			{"get", "absent"},                                // $-1
			{"hset", "k0", "f", "v"},                         // a WRONGTYPE reply
			call.Command(false),                              // EVALSHA: an array with an error in it
		}
		if err := p.Send(cmds); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if v, err := p.Recv(); err != nil || v != "OK" {
			t.Fatalf("%d: SET = %v, %v", i, v, err)
		}
		if v, err := p.Recv(); err != nil || v != "x\r\ny" {
			t.Fatalf("%d: GET = %q, %v", i, v, err)
		}
		if v, err := p.Recv(); err != nil || v != nil {
			t.Fatalf("%d: GET absent = %v, %v", i, v, err)
		}
		v, err := p.Recv()
		var re redisconn.ReplyError
		if !errors.As(err, &re) || v != nil || !strings.HasPrefix(string(re), "WRONGTYPE ") {
			t.Fatalf("%d: HSET = %v, %v", i, v, err)
		}
		v, err = p.Recv()
		a, ok := v.([]any)
		if err != nil || !ok || len(a) != 3 || a[0] != "v" || a[1] != int64(i+1) || a[2] != redisconn.ReplyError("nested") {
			t.Fatalf("%d: EVALSHA = %#v, %v", i, v, err)
		}
	}
	// The database of the URL, not 0: the client's own reads there.
	if got, err := c.Client().Get(ctx, "n").Result(); err != nil || got != strconv.Itoa(n) {
		t.Errorf("GET n in db 3 = %q, %v", got, err)
	}
}

// A pipe to a server that stopped answering fails within the timeout as a
// network failure (retryable), and so does every later call.
func TestPipeTimeout(t *testing.T) {
	srv := redistest.New(t)
	c, err := redisconn.Open(redisconn.ConnConfig{URL: srv.URL, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	p, err := c.OpenPipe(ctx, "k", "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := syscall.Kill(srv.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(srv.Pid(), syscall.SIGCONT)
	if err := p.Send([][]any{{"ping"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Recv()
	if !redisconn.Retryable(err) || exit.Classify(err) != exit.Unavailable {
		t.Fatalf("Recv from a stopped server: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Recv gave up after %s", took)
	}
	if _, err := p.Recv(); err == nil {
		t.Error("a failed pipe read again")
	}
	if err := p.Send([][]any{{"ping"}}); err == nil {
		t.Error("a failed pipe took a send")
	}
}

// Cancelling the pipe's context closes it.
func TestPipeContext(t *testing.T) {
	srv := redistest.New(t)
	c, err := redisconn.Open(redisconn.ConnConfig{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := c.OpenPipe(ctx, "k", "")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for p.Send([][]any{{"ping"}}) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the pipe outlived its context")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exec's use of a pipe (DialPipe): commands encoded in the caller's
// goroutine (WriteCommand, WriteArgs) and sent (Send) go in the order
// written, many more than one buffer's worth; replies keep RESP's types
// (RecvReply); the opening commands are the caller's to send.
func TestDialPipeWritesInOrder(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{Dir: t.TempDir(), Config: []string{"requirepass s3cret"}})
	c, err := redisconn.Open(redisconn.ConnConfig{URL: fmt.Sprintf("redis://:s3cret@127.0.0.1:%d/2", srv.Opts.Port), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, opening, err := c.DialPipe(context.Background(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(opening) != 2 || opening[0][0] != "AUTH" || strings.Join(opening[1], " ") != "SELECT 2" {
		t.Fatalf("opening commands: %q", opening)
	}
	for _, o := range opening {
		if err := p.WriteCommand(o...); err != nil {
			t.Fatal(err)
		}
	}
	// 3 commands a round, past several of Write's buffers.
	const n = 3000
	big := strings.Repeat("x", 100)
	for i := range n {
		if err := p.WriteCommand("RPUSH", "l", strconv.Itoa(i), big); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteArgs([]any{"LLEN", "l"}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if err := p.Send([][]any{{"GET", "absent"}}); err != nil { // after what Write holds
				t.Fatal(err)
			}
		} else if err := p.WriteCommand("GET", "absent"); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range opening {
		if r, err := p.RecvReply(); err != nil || r.Kind != resp.Status {
			t.Fatalf("opening %d: %+v, %v", i, r, err)
		}
	}
	for i := range n {
		if r, err := p.RecvReply(); err != nil || r.Kind != resp.Int || r.Int != int64(2*(i+1)) {
			t.Fatalf("%d: RPUSH = %+v, %v", i, r, err)
		}
		if r, err := p.RecvReply(); err != nil || r.Kind != resp.Int || r.Int != int64(2*(i+1)) {
			t.Fatalf("%d: LLEN = %+v, %v", i, r, err)
		}
		if r, err := p.RecvReply(); err != nil || r.Kind != resp.Nil {
			t.Fatalf("%d: GET absent = %+v, %v", i, r, err)
		}
	}
	if p.Buffered() {
		t.Error("replies left after the last")
	}
}

// The pipe knows which scripts it loaded: a script loaded at OpenPipe, or
// by WriteLoad, is not loaded again; one loaded in a transaction counts
// once the reader says it ran (ScriptsRan), in the generation it was
// written in; a SCRIPT FLUSH written (ScriptsFlushed) or a NOSCRIPT read
// (ScriptsLost) loads every script again.
func TestPipeScripts(t *testing.T) {
	srv := redistest.New(t)
	c, err := redisconn.Open(redisconn.ConnConfig{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other := redisconn.NewLua[struct{}, int64](redisconn.Int64Reply, "return 2\n").Script
	p, err := c.OpenPipe(context.Background(), "k", "", pipeScript.Script)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	load := func(s *redisconn.Script, deferred bool) bool {
		t.Helper()
		loaded, err := p.WriteLoad(s, deferred)
		if err != nil {
			t.Fatal(err)
		}
		return loaded
	}
	gen := p.ScriptGen()
	if load(pipeScript.Script, false) {
		t.Error("the script OpenPipe loaded was loaded again")
	}
	if !load(other, true) || !load(other, true) {
		t.Error("a deferred load counted before the transaction ran")
	}
	p.ScriptsRan(gen, other)
	if p.ScriptGen() != gen || load(other, false) {
		t.Error("a load the transaction ran did not count")
	}
	p.ScriptsFlushed()
	gen2 := p.ScriptGen()
	if gen2 == gen || !load(pipeScript.Script, false) || load(pipeScript.Script, false) {
		t.Error("after SCRIPT FLUSH: not loaded again once")
	}
	p.ScriptsRan(gen, other) // written before the flush: it does not count
	p.ScriptGen()
	if !load(other, false) {
		t.Error("a load of before the SCRIPT FLUSH counted")
	}
	p.ScriptsLost()
	p.ScriptGen()
	if !load(pipeScript.Script, false) || !load(other, false) {
		t.Error("after NOSCRIPT: not loaded again")
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	// Every SCRIPT LOAD written went: its replies are the SHAs.
	for i := range 6 {
		r, err := p.RecvReply()
		if err != nil || r.Kind != resp.Bulk || len(r.Str) != 40 {
			t.Fatalf("SCRIPT LOAD %d: %+v, %v", i, r, err)
		}
	}
}
