package view

import (
	"fmt"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/bytesize"
	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/ops/health"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
)

// Server is inspect --server's view: what the server is, its IDMP support,
// eviction, defaults, round-trip time and lints. An unavailable emulation
// is also a warning (a risky eviction policy is the command's, every form).
type Server struct {
	redisconn.ServerReport
	Lints []health.Lint `json:"lints"`
}

func (v Server) JSON() any { return v }

// Raw shows Table's pairs, with raw values.
func (v Server) Raw(p *render.Printer) error { return v.Table(p) }

func (v Server) Table(p *render.Printer) error {
	r, lints := v.ServerReport, v.Lints
	idmp := "no (idmpctl emulates IDMP with Lua)"
	if r.NativeIDMP {
		idmp = "yes (XADD IDMP, XCFGSET)"
		if len(r.Unknown) > 0 {
			idmp = "yes (XADD IDMP; the server does not know " + strings.Join(r.Unknown, ", ") + " by that name: renamed away or disabled)"
		}
	}
	pairs := []render.Pair{
		{"url", r.URL},
		{"server", r.Product + " " + r.Version},
		{"mode", r.Mode},
		{"role", r.Role},
	}
	pairs = addIf(pairs, len(r.Primaries) > 0, render.Pair{"primaries", strings.Join(r.Primaries, " ")})
	pairs = append(pairs, render.Pair{"native-idmp", idmp}, render.Pair{"emulation", r.Emulation})
	if e := r.Eviction; e != nil {
		maxmemory := fmt.Sprint(e.MaxMemory)
		if p.Human() {
			maxmemory = "0 (no limit)"
			if e.MaxMemory > 0 {
				maxmemory = fmt.Sprintf("%s (%s B)", bytesize.Format(e.MaxMemory), render.Count(e.MaxMemory))
			}
		}
		pairs = append(pairs, render.Pair{"maxmemory", maxmemory}, render.Pair{"maxmemory-policy", e.Policy})
	}
	if strings.HasPrefix(r.Emulation, "unavailable") && !r.NativeIDMP {
		p.Warnf("emulated IDMP is %s", r.Emulation)
	}
	if r.Defaults != nil {
		duration, maxsize := settings(p, r.Defaults.Duration, r.Defaults.MaxSize)
		pairs = append(pairs,
			render.Pair{"stream-idmp-duration", duration},
			render.Pair{"stream-idmp-maxsize", maxsize})
	}
	if p.Human() {
		pairs = append(pairs, render.Pair{"ping rtt", duration.Format(time.Duration(r.PingRTTus) * time.Microsecond)})
	} else {
		pairs = append(pairs, render.Pair{"ping-rtt-us", fmt.Sprint(r.PingRTTus)})
	}
	p.View("Server", append(render.Rows(pairs), lintRows(p, lints)...))
	return nil
}
