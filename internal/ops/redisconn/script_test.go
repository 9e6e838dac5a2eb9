package redisconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// A server with EVAL renamed away but EVALSHA and SCRIPT LOAD kept: the
// scripts run (SCRIPT LOAD, then EVALSHA), single calls as batches do, and
// the emulation probe says so. Before: a single call fell back to EVAL
// and failed (78, "emulation unavailable") while batches, which load their
// script first, ran; and a call with a wait after it, which goes as EVAL
// when the script is not known loaded, failed so (claim acquire --wait-aof).
func TestScriptsWithoutEVAL(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t, `rename-command EVAL ""`)
	ctx := context.Background()
	type args struct {
		V string `lua:"v"`
	}
	s := redisconn.NewLua[args, any](redisconn.CommandReply, "return v\n")
	cw := s.Call(&args{V: "w"})
	d := redisconn.Durability{Replicas: 1, Timeout: 10 * time.Millisecond} // none: it times out
	if _, err := conn.Run(ctx, redisconn.RunOpts{Key: "k", Durability: d}, cw); err != nil || cw.Cmd.Val() != "w" {
		t.Fatalf("Run with a wait: %v, %v, %v", cw.Cmd.Val(), cw.Cmd.Err(), err)
	}
	cx := s.Call(&args{V: "x"})
	if _, err := conn.Run(ctx, redisconn.RunOpts{}, cx); err != nil || cx.Cmd.Val() != "x" {
		t.Fatalf("Run: %v, %v", cx.Cmd.Val(), err)
	}
	if err := conn.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls := []*redisconn.Call{s.Call(&args{V: "y"})}
	if _, err := conn.Run(ctx, redisconn.RunOpts{}, calls...); err != nil || calls[0].Cmd.Val() != "y" {
		t.Fatalf("Run: %v, %v", calls[0].Cmd.Val(), err)
	}
	if err := conn.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	conn.WatchEviction = true
	cl := s.Call(&args{V: "z"})
	if _, err := conn.Run(ctx, redisconn.RunOpts{Eviction: true}, cl); err != nil {
		t.Fatal(err)
	}
	if v, err := cl.Cmd.Text(); err != nil || v != "z" {
		t.Fatalf("Run noting eviction: %q, %v", v, err)
	}
	if got := redisconn.Emulation(ctx, conn); got != "available" {
		t.Fatalf("Emulation: %q", got)
	}
}
