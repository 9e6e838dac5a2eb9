package stream

import (
	"context"
	"errors"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
)

// Server-level defaults in emulated mode (CONFIG SET stream-idmp-duration
// and stream-idmp-maxsize through idmpctl exec): a hash at idmp.DefaultsKey.
// In a cluster that key lives in one slot while streams live in all, and a
// script reads only keys of its stream's slot, so the scripts never read
// it: the caller reads it (once per process) and sends the values as the
// last two arguments of every script call. A stream's meta takes them when
// its state starts (its first idempotent add) and keeps them, so changing
// the defaults never changes an existing stream. An add that does not know
// them is refused by the script before any write when, and only when, the
// stream's state starts ({'D'}): the steady-state add stays one round trip.

// errNeedDefaults is the add script's refusal: the stream's state starts
// with this add and the server-level defaults were not sent.
var errNeedDefaults = errors.New("the add needs the server-level IDMP defaults")

// loadDefaults reads the emulated server-level defaults once (a key that
// is absent, or a value out of range, is Redis's default).
func (s *Streams) loadDefaults(ctx context.Context) error {
	if s.Defaults != nil {
		return nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	d, err := s.Conn.EmulatedIDMPDefaults(ctx)
	if err != nil {
		return exit.Wrap(err, "read the IDMP defaults ("+idmp.DefaultsKey+")")
	}
	s.Defaults = &d
	return nil
}

// LoadDefaults reads the server-level defaults unless known already.
func (s *Streams) LoadDefaults(ctx context.Context) error { return s.loadDefaults(ctx) }

// SetDefaults tells the streams the server-level defaults (a caller that
// read or wrote them itself).
func (s *Streams) SetDefaults(d idmp.Defaults) { s.Defaults = &d }
