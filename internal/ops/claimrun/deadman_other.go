//go:build !linux

package claimrun

import (
	"errors"
	"time"
)

// deadman: only Linux has the guard that kills the command when idmpctl
// dies, which the dead man's switch relies on (deadman_linux.go).
type deadman struct{}

func newDeadman() (*deadman, error) { return nil, errors.ErrUnsupported }

func (*deadman) set(time.Time) error { return nil }

func (*deadman) disarm() {}
