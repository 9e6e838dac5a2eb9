package view

import (
	"strconv"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
)

// Ack is what a write that waited (--wait-replicas, --wait-aof) adds to
// its view: the replicas that acknowledged it, and with --wait-aof whether
// the primary fsynced it. Embedded in a JSON object, its fields are the
// object's.
type Ack struct {
	ReplicasAcked *int  `json:"replicas_acked,omitempty"`
	LocalAOF      *bool `json:"local_aof_fsynced,omitempty"`
}

// AckOf is the acknowledgement of a write that asked for d: none when it
// waited for nothing, or the wait failed.
func AckOf(d redisconn.Durability, a *redisconn.Ack) Ack {
	if !d.On() || a == nil || a.Err != nil {
		return Ack{}
	}
	c := *a // the view's own copy
	j := Ack{ReplicasAcked: &c.Replicas}
	if d.AOF {
		j.LocalAOF = &c.LocalAOF
	}
	return j
}

// addIf is list with v after it when on: a pair or a part a view shows
// only when it applies.
func addIf[T any](list []T, on bool, v T) []T {
	if on {
		return append(list, v)
	}
	return list
}

// Pairs is the acknowledgement in a view.
func (j Ack) Pairs() []render.Pair {
	var out []render.Pair
	if j.ReplicasAcked != nil {
		out = append(out, render.Pair{"replicas-acked", strconv.Itoa(*j.ReplicasAcked)})
	}
	if j.LocalAOF != nil {
		out = append(out, render.Pair{"local-aof-fsynced", strconv.FormatBool(*j.LocalAOF)})
	}
	return out
}
