package cmd

import (
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/spf13/cobra"
)

// WaitFlags say how far each write must reach before the command succeeds.
type WaitFlags struct {
	Replicas   int
	Timeout    time.Duration
	AOF        bool
	TimeoutSet bool // --wait-timeout was given
}

func addWaitFlags(c *cobra.Command, w *WaitFlags) {
	fl := c.Flags()
	fl.IntVar(&w.Replicas, "wait-replicas", 0, "after each write, wait until N replicas acknowledged it (WAIT); exit 69 if fewer did (0: no wait)")
	durationVar(fl, &w.Timeout, "wait-timeout", time.Second, "how long --wait-replicas and --wait-aof wait (more than 0)")
	fl.BoolVar(&w.AOF, "wait-aof", false, "wait with WAITAOF (Redis 7.2+): the write fsynced to the primary's AOF, and to the AOF of the --wait-replicas replicas")
}

// validate checks the wait flags without a server.
func (w WaitFlags) validate() error {
	on := w.Replicas > 0 || w.AOF
	switch {
	case w.Replicas < 0:
		return exit.Usagef("--wait-replicas %d: must not be negative", w.Replicas)
	case w.TimeoutSet && !on:
		return exit.Usagef("--wait-timeout goes with --wait-replicas N or --wait-aof")
	case on && w.Timeout < time.Millisecond:
		return exit.Usagef("--wait-timeout %s: must be at least 1ms (WAIT's 0 would wait for ever)", w.Timeout)
	}
	return nil
}

// durability is what the flags ask of each write.
func (w WaitFlags) durability() redisconn.Durability {
	if w.Replicas <= 0 && !w.AOF {
		return redisconn.Durability{}
	}
	return redisconn.Durability{Replicas: w.Replicas, Timeout: w.Timeout, AOF: w.AOF}
}
