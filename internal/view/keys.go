package view

import (
	"slices"

	"github.com/idmpctl/idmpctl/internal/render"
)

// listedKeys is how many keys a confirmation or a dry run names before
// "and N more".
const listedKeys = 20

// KeyList gathers the first listedKeys keys of a selection and counts the
// rest.
type KeyList struct {
	Keys []string
	More int64
}

// Add lists key, or counts it past listedKeys.
func (l *KeyList) Add(key string) {
	if len(l.Keys) < listedKeys {
		l.Keys = append(l.Keys, render.Field(key))
		return
	}
	l.More++
}

// Lines are the list's lines: the keys (sorted: SCAN's order is none),
// then "and N more".
func (l KeyList) Lines() []string {
	out := slices.Sorted(slices.Values(l.Keys))
	if l.More > 0 {
		out = append(out, "and "+render.Count(l.More)+" more")
	}
	return out
}
