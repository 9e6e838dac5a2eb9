package stream

import (
	"context"
	"errors"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
)

// Emulated server-level defaults (exec's CONFIG SET stream-idmp-*) live at
// idmp.DefaultsKey, in one cluster slot, so scripts never read it: the
// caller reads it once and sends the values. A stream keeps those of its
// state's start; a script not sent them refuses ({'D'}) only then, before
// writing, so the steady-state add stays one round trip.

// errNeedDefaults is the add script's refusal: the stream's state starts
// with this add and the server-level defaults were not sent.
var errNeedDefaults = errors.New("the add needs the server-level IDMP defaults")

// LoadDefaults reads the emulated server-level defaults once (a key that
// is absent, or a value out of range, is Redis's default).
func (s *Streams) LoadDefaults(ctx context.Context) error {
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

// SetDefaults tells the streams the server-level defaults (a caller that
// read or wrote them itself).
func (s *Streams) SetDefaults(d idmp.Defaults) { s.Defaults = &d }
