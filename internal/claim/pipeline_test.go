package claim

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

func TestClaimPipelineAcquireManyAndCompleteMany(t *testing.T) {
	ctx, c := claimClient(t)
	var params []AcquireParams
	for i := range 5 {
		p := acquireParams("batch:"+strconv.Itoa(i), "w1")
		p.Fingerprint = Fingerprint([]byte(strconv.Itoa(i)))
		params = append(params, p)
	}
	acq, err := AcquireMany(ctx, c, params)
	if err != nil {
		t.Fatal(err)
	}
	var done []CompleteParams
	for i, call := range acq {
		r := call.Result
		if call.Err != nil || r.Outcome != Acquired || r.Token != 1 || r.Attempt != 1 {
			t.Fatalf("acquire %d: %+v %v", i, r, call.Err)
		}
		// A lean reply: what a worker needs, not the whole record.
		rec := r.Record
		if rec.Status != StatusProcessing || rec.Token != 1 || rec.Attempts != 1 || rec.LeaseUntil != rec.Now+60000 ||
			rec.TTLms != 3600000 || rec.Owner != "" || rec.Fingerprint != "" {
			t.Errorf("acquire %d: lean record %+v", i, rec)
		}
		// The key holds the whole record all the same.
		h := hash(t, ctx, c, params[i].Key)
		if h["owner"] != "w1" || h["fingerprint"] != params[i].Fingerprint || h["created"] != strconv.FormatInt(rec.Now, 10) {
			t.Errorf("acquire %d: stored %v", i, h)
		}
		result := "out " + strconv.Itoa(i)
		done = append(done, CompleteParams{Key: params[i].Key, Token: r.Token, Result: &result, TTL: 2 * time.Hour})
	}

	cmp, err := CompleteMany(ctx, c, done)
	if err != nil {
		t.Fatal(err)
	}
	for i, call := range cmp {
		rec := call.Record
		if call.Err != nil || rec.Status != StatusCompleted || rec.Token != 1 || rec.Result != *done[i].Result || !rec.HasResult {
			t.Fatalf("complete %d: %+v %v", i, rec, call.Err)
		}
		h := hash(t, ctx, c, done[i].Key)
		if h["status"] != StatusCompleted || h["result"] != *done[i].Result || h["fingerprint"] != params[i].Fingerprint || h["owner"] != "w1" {
			t.Errorf("complete %d: stored %v", i, h)
		}
		wantTTL(t, ctx, c, done[i].Key, 2*time.Hour)
	}

	// Retried (the first reply was lost): the same outcome, nothing changed.
	before := hash(t, ctx, c, "batch:0")
	cmp, err = CompleteMany(ctx, c, done[:1])
	if err != nil || cmp[0].Err != nil || cmp[0].Record.Status != StatusCompleted || cmp[0].Record.Result != "out 0" {
		t.Fatalf("re-complete: %+v %v %v", cmp[0].Record, cmp[0].Err, err)
	}
	if !reflect.DeepEqual(before, hash(t, ctx, c, "batch:0")) {
		t.Error("a retried complete changed the record")
	}

	// A redelivery of the batch: every key is done, with its result.
	acq, err = AcquireMany(ctx, c, params)
	if err != nil {
		t.Fatal(err)
	}
	for i, call := range acq {
		if call.Err != nil || call.Result.Outcome != Done || call.Result.Record.Result != "out "+strconv.Itoa(i) {
			t.Errorf("redelivery %d: %+v %v", i, call.Result, call.Err)
		}
	}
}

// Every step of a pipeline has its own outcome: a busy key, a mismatch, a
// foreign key, a usage error and a lost token do not disturb the others.
func TestClaimPipelineMixedOutcomes(t *testing.T) {
	ctx, c := claimClient(t)
	mustAcquire(t, ctx, c, acquireParams("busy", "other"), Acquired)
	fp := acquireParams("fp", "other")
	fp.Fingerprint = "aaaa"
	mustAcquire(t, ctx, c, fp, Acquired)
	c.Set(ctx, "foreign", "PROCESSING", 0)
	c.HSet(ctx, "foreign:hash", "state", "STARTED")
	mustAcquire(t, ctx, c, AcquireParams{Key: "taken", Owner: "w0", Lease: time.Millisecond, TTL: time.Hour}, Acquired)
	time.Sleep(5 * time.Millisecond)
	mustAcquire(t, ctx, c, acquireParams("taken", "w1"), Takeover)
	foreignDump, _ := c.Dump(ctx, "foreign:hash").Result()

	var p ClaimPipeline
	fresh := p.Acquire(acquireParams("fresh", "w1"))
	busy := p.Acquire(acquireParams("busy", "w1"))
	fpMismatch := acquireParams("fp", "w1")
	fpMismatch.Fingerprint = "bbbb"
	mismatch := p.Acquire(fpMismatch)
	foreign := p.Acquire(acquireParams("foreign", "w1"))
	usage := p.Acquire(AcquireParams{Key: "u", Owner: "w1", Lease: time.Hour, TTL: time.Minute})
	lost := p.Complete(CompleteParams{Key: "taken", Token: 1, TTL: time.Hour})
	foreignComplete := p.Complete(CompleteParams{Key: "foreign:hash", Token: 1, TTL: time.Hour})
	absent := p.Renew("absent", 1, time.Minute, time.Hour)
	if p.Len() != 7 {
		t.Fatalf("queued %d, want 7 (the usage error is not sent)", p.Len())
	}
	if err := p.Exec(ctx, c); err != nil {
		t.Fatal(err)
	}
	if p.Len() != 0 {
		t.Error("Exec did not empty the pipeline")
	}
	if fresh.Err != nil || fresh.Result.Outcome != Acquired {
		t.Errorf("fresh: %+v %v", fresh.Result, fresh.Err)
	}
	// Outcomes other than success carry the whole record.
	if r := busy.Result; busy.Err != nil || r.Outcome != Busy || r.Record.Owner != "other" || r.LeaseLeftMs <= 0 || r.Token != 0 {
		t.Errorf("busy: %+v %v", r, busy.Err)
	}
	if r := mismatch.Result; mismatch.Err != nil || r.Outcome != Mismatch || r.Record.Fingerprint != "aaaa" {
		t.Errorf("mismatch: %+v %v", r, mismatch.Err)
	}
	if exit.Code(foreign.Err) != exit.Data || !errors.Is(foreign.Err, ErrNotClaimRecord) {
		t.Errorf("foreign: %v", foreign.Err)
	}
	if exit.Code(usage.Err) != exit.Usage {
		t.Errorf("usage: %v", usage.Err)
	}
	var le *LostError
	if exit.Code(lost.Err) != exit.Lost || !errors.As(lost.Err, &le) || le.Record.Token != 2 || le.Record.Owner != "w1" {
		t.Errorf("lost: %v", lost.Err)
	}
	if exit.Code(foreignComplete.Err) != exit.Data || !errors.Is(foreignComplete.Err, ErrNotClaimRecord) {
		t.Errorf("complete of a foreign hash: %v", foreignComplete.Err)
	}
	if after, _ := c.Dump(ctx, "foreign:hash").Result(); after != foreignDump {
		t.Error("a lean complete wrote to a foreign hash")
	}
	wantCode(t, absent.Err, exit.Lost, `renew "absent": the key does not exist`)
}

// A worker records one message's outcome and claims the next in one trip;
// renew and fail go the same way.
func TestClaimPipelineWorkerLoop(t *testing.T) {
	ctx, c := claimClient(t)
	var p ClaimPipeline
	next := p.Acquire(acquireParams("msg:0", "w1"))
	for i := 1; i <= 3; i++ {
		if err := p.Exec(ctx, c); err != nil || next.Err != nil || next.Result.Outcome != Acquired {
			t.Fatalf("msg:%d: %+v %v %v", i-1, next.Result, next.Err, err)
		}
		key, token := "msg:"+strconv.Itoa(i-1), next.Result.Token
		renewed := p.Renew(key, token, 2*time.Minute, time.Hour)
		if err := p.Exec(ctx, c); err != nil || renewed.Err != nil || renewed.Record.LeaseUntil != renewed.Record.Now+120000 {
			t.Fatalf("renew %s: %+v %v %v", key, renewed.Record, renewed.Err, err)
		}
		var step *StepCall
		if i%2 == 0 {
			step = p.Fail(key, token, "boom", time.Hour)
		} else {
			step = p.Complete(CompleteParams{Key: key, Token: token, TTL: time.Hour})
		}
		next = p.Acquire(acquireParams("msg:"+strconv.Itoa(i), "w1"))
		if err := p.Exec(ctx, c); err != nil || step.Err != nil {
			t.Fatalf("record %s: %+v %v %v", key, step.Record, step.Err, err)
		}
		want := StatusCompleted
		if i%2 == 0 {
			want = StatusFailed
		}
		if step.Record.Status != want || hash(t, ctx, c, key)["status"] != want {
			t.Errorf("%s: %+v", key, step.Record)
		}
	}
	if h := hash(t, ctx, c, "msg:1"); h["error"] != "boom" || h["owner"] != "w1" {
		t.Errorf("msg:1 = %v", h)
	}
}

// FullRecords: success replies carry what Acquire and Complete return.
func TestClaimPipelineFullRecords(t *testing.T) {
	ctx, c := claimClient(t)
	p := ClaimPipeline{FullRecords: true}
	params := acquireParams("full:1", "w1")
	params.Fingerprint = "ffff"
	call := p.Acquire(params)
	if err := p.Exec(ctx, c); err != nil || call.Err != nil {
		t.Fatal(err, call.Err)
	}
	single, err := ReadClaim(ctx, c, "full:1")
	if err != nil {
		t.Fatal(err)
	}
	got := call.Result.Record
	got.Now, got.TTLms, single.Now, single.TTLms = 0, 0, 0, 0
	if !reflect.DeepEqual(got, single) {
		t.Errorf("full acquire record %+v, want %+v", got, single)
	}
	result := "r"
	done := p.Complete(CompleteParams{Key: "full:1", Token: 1, Result: &result, TTL: time.Hour})
	if err := p.Exec(ctx, c); err != nil || done.Err != nil {
		t.Fatal(err, done.Err)
	}
	if r := done.Record; r.Owner != "w1" || r.Fingerprint != "ffff" || r.Created == 0 || r.Result != "r" {
		t.Errorf("full complete record %+v", r)
	}
}

func TestClaimPipelineSurvivesScriptFlush(t *testing.T) {
	ctx, c := claimClient(t)
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls, err := AcquireMany(ctx, c, []AcquireParams{acquireParams("f:1", "w"), acquireParams("f:2", "w")})
	if err != nil || calls[0].Err != nil || calls[1].Err != nil || calls[1].Result.Outcome != Acquired {
		t.Fatalf("after SCRIPT FLUSH: %v %+v %+v", err, calls[0], calls[1])
	}
	if n, _ := c.Exists(ctx, "f:1", "f:2").Result(); n != 2 {
		t.Errorf("%d keys written", n)
	}
}

func TestClaimPipelineRoundTripFailure(t *testing.T) {
	c, srv := redistest.Conn(t)
	ctx := context.Background()
	srv.Kill()
	calls, err := AcquireMany(ctx, c.Client, []AcquireParams{acquireParams("k:1", "w"), acquireParams("k:2", "w")})
	if err == nil {
		t.Fatal("no error from a dead server")
	}
	for i, call := range calls {
		if call.Err == nil || exit.Code(call.Err) != exit.Unavailable {
			t.Errorf("call %d: %v (code %d)", i, call.Err, exit.Code(call.Err))
		}
	}
}

// In a cluster the steps go to their keys' nodes, still in one Exec.
func TestClaimPipelineOnCluster(t *testing.T) {
	c, cl := redistest.ClusterConn(t)
	ctx := context.Background()
	var params []AcquireParams
	for i := range 30 {
		params = append(params, acquireParams("cl:"+strconv.Itoa(i), "w"))
	}
	acq, err := AcquireMany(ctx, c.Client, params)
	if err != nil {
		t.Fatal(err)
	}
	var done []CompleteParams
	for i, call := range acq {
		if call.Err != nil || call.Result.Outcome != Acquired {
			t.Fatalf("acquire %d: %+v %v", i, call.Result, call.Err)
		}
		done = append(done, CompleteParams{Key: params[i].Key, Token: call.Result.Token, TTL: time.Hour})
	}
	cmp, err := CompleteMany(ctx, c.Client, done)
	if err != nil {
		t.Fatal(err)
	}
	for i, call := range cmp {
		if call.Err != nil || call.Record.Status != StatusCompleted {
			t.Fatalf("complete %d: %+v %v", i, call.Record, call.Err)
		}
	}
	for _, n := range cl.Nodes {
		if size, err := n.Do("DBSIZE"); err != nil || size == "0" {
			t.Fatalf("node %s holds %s keys (%v): the keys should spread", n.Addr, size, err)
		}
	}
}

// On a single server the steps run in one script: a step that fails (here
// a write refused at maxmemory) ends that step only.
func TestClaimPipelineStepErrorEndsThatStepOnly(t *testing.T) {
	ctx, c := claimClient(t)
	mustAcquire(t, ctx, c, acquireParams("held", "other"), Acquired)
	if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	var p ClaimPipeline
	refused := p.Acquire(acquireParams("new", "w1"))
	busy := p.Acquire(acquireParams("held", "w1"))
	renewed := p.Renew("held", 1, time.Minute, time.Hour)
	if err := p.Exec(ctx, c); err != nil {
		t.Fatal(err)
	}
	if refused.Err == nil || !strings.Contains(refused.Err.Error(), "OOM") || !strings.Contains(refused.Err.Error(), `acquire "new"`) {
		t.Errorf("refused: %+v %v", refused.Result, refused.Err)
	}
	if busy.Err != nil || busy.Result.Outcome != Busy {
		t.Errorf("busy after a failed step: %+v %v", busy.Result, busy.Err)
	}
	if renewed.Err == nil || !strings.Contains(renewed.Err.Error(), "OOM") {
		t.Errorf("renew at maxmemory: %+v %v", renewed.Record, renewed.Err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, "new").Result(); n != 0 {
		t.Error("the refused acquire wrote its key")
	}
}
