package keyspace

// purge --backup: each chunk is durably saved (DUMP, PTTL, the expiry on the
// server's clock) before its re-check and delete are sent; those the
// re-check kept are then marked.

import (
	"context"
	_ "embed"
	"errors"
	"slices"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

//go:embed lua/purge_backup.lua
var backupLua string

var backupScript = redisconn.NewLua[backupArgs](decodeBackupReply, backupLua)

// backupArgs are the backup script's: the keys it reads.
type backupArgs struct {
	Candidates []string `lua:"CANDIDATES,key,rest"`
}

// PurgeBackup is where purge saves records before it deletes them.
type PurgeBackup interface {
	// Save makes records durable: when it returns nil they may be deleted.
	Save(recs []backup.Record) error
	// Kept marks saved keys the purge did not delete after all.
	Kept(keys []string, reason string) error
}

// saveBackup reads the chunk's keys with the backup script (pipelined
// calls of perCall keys) and saves them. A key gone since it was read has
// nothing to save: the re-check keeps it ("changed").
func (p *purger) saveBackup(ctx context.Context, chunk []keyRead) error {
	if p.opts.Backup == nil {
		return nil
	}
	var calls []*redisconn.Call
	for part := range slices.Chunk(chunk, p.perCall(chunk)) {
		calls = append(calls, backupScript.Call(&backupArgs{Candidates: keysOf(part)}))
	}
	if _, err := p.c.Run(ctx, redisconn.RunOpts{}, calls...); err != nil {
		return exit.Wrap(err, "backup")
	}
	recs := make([]backup.Record, 0, len(chunk))
	for _, cl := range calls {
		vals, err := backupScript.Reply(cl)
		if err != nil {
			return exit.Wrap(err, "backup")
		}
		if len(vals) != len(cl.Keys) {
			return exit.New(exit.Internal, "backup", "%d replies for %d keys", len(vals), len(cl.Keys))
		}
		for j, v := range vals {
			if v.present {
				recs = append(recs, backup.Record{Key: cl.Keys[j], Payload: []byte(v.payload), PTTL: v.pttl, ExpiresAt: v.at})
			}
		}
	}
	if err := p.opts.Backup.Save(recs); err != nil {
		return &exit.Error{Code: exit.Config, What: "write the backup", Err: err,
			Hint: "nothing of this chunk was deleted; free space or give --backup another place, then run the purge again"}
	}
	return nil
}

// backupEntry is a key's {pttl, expires_at, payload}; present: not gone.
type backupEntry struct {
	pttl, at int64
	payload  string
	present  bool
}

// decodeBackupReply reads the backup script's reply: an entry a key.
func decodeBackupReply(v any) ([]backupEntry, error) {
	bad := errors.New("unexpected reply of the backup script")
	list, ok := v.([]any)
	if !ok {
		return nil, bad
	}
	out := make([]backupEntry, len(list))
	for i, e := range list {
		t, _ := e.([]any)
		if len(t) != 3 {
			return nil, bad
		}
		pttl, ok1 := t[0].(int64)
		at, ok2 := t[1].(int64)
		if !ok1 || !ok2 {
			return nil, bad
		}
		payload, ok := t[2].(string)
		out[i] = backupEntry{pttl: pttl, at: at, payload: payload, present: ok && pttl != -2}
	}
	return out, nil
}

// markKept marks the chunk's keys the re-check kept, as changed, live or
// refused; without outcomes (the re-check's reply never came) every key,
// as of unknown fate: restore puts those back only where missing.
func (p *purger) markKept(chunk []keyRead, outcomes []PurgeOutcome) error {
	if p.opts.Backup == nil {
		return nil
	}
	kept := map[string][]string{}
	for i, rd := range chunk {
		reason := backup.KeptUnknown
		switch {
		case outcomes == nil:
		case outcomes[i] == PurgeDeleted:
			continue
		case outcomes[i] == PurgeLive:
			reason = backup.KeptLive
		case outcomes[i] == purgeRefused:
			reason = backup.KeptRefused
		default:
			reason = backup.KeptChanged
		}
		kept[reason] = append(kept[reason], rd.rec.Key)
	}
	for _, reason := range []string{backup.KeptChanged, backup.KeptLive, backup.KeptRefused, backup.KeptUnknown} {
		if len(kept[reason]) == 0 {
			continue
		}
		if err := p.opts.Backup.Kept(kept[reason], reason); err != nil {
			return &exit.Error{Code: exit.Config, What: "write the backup", Err: err}
		}
	}
	return nil
}
