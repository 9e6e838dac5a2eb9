package view

import "github.com/idmpctl/idmpctl/internal/render"

// Version is idmpctl version's output (and idmpctl --version's).
type Version struct {
	Version, Commit, Go string
}

func (v Version) JSON() any {
	return map[string]string{"version": v.Version, "commit": v.Commit, "go": v.Go}
}

func (v Version) Table(p *render.Printer) error {
	p.KV("idmpctl", []render.Pair{{"version", v.Version}, {"commit", v.Commit}, {"go", v.Go}})
	return nil
}

func (v Version) Raw(p *render.Printer) error {
	p.Line("idmpctl %s", v.Version)
	return nil
}
