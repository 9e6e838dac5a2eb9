package stream

import "context"

// Resolved is the mode after asking the server if need be.
func (s *Streams) Resolved(ctx context.Context) (Mode, error) {
	err := s.resolve(ctx)
	return s.Mode, err
}
