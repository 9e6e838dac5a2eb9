package batch

// parseFast reads the common line shape in one pass and one allocation:
// "iid", an optional "pid" and "fields" ({"f":"v",...} or [["f","v"],...]),
// strings without escapes. Anything else gives up (ok false) to parseFull,
// which has the error messages. Parsing is most of xadd --batch's own time,
// and encoding/json's tokenizer costs several times this.
func parseFast(b []byte, auto bool) (l Line, ok bool) {
	s := string(b) // every field is a substring of it
	p := fastParser{s: s}
	if !p.byte('{') {
		return Line{}, false
	}
	seenFields := false
	for { // "{}" too gives up: it has no fields
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return Line{}, false
		}
		switch dupIID, dupPID := l.HasIID, l.HasPID; key {
		case "iid":
			if l.IID, l.HasIID = p.str(); dupIID || !l.HasIID {
				return Line{}, false
			}
		case "pid":
			if l.PID, l.HasPID = p.str(); dupPID || !l.HasPID || l.PID == "" {
				return Line{}, false
			}
		case "fields":
			if l.Fields, ok = p.fields(); seenFields || !ok {
				return Line{}, false
			}
			seenFields = true
		default:
			return Line{}, false
		}
		if p.byte('}') {
			break
		}
		if !p.byte(',') {
			return Line{}, false
		}
	}
	p.space()
	switch {
	case p.i != len(s), auto && l.HasIID, !auto && (!l.HasIID || l.IID == ""), len(l.Fields) == 0:
		return Line{}, false
	}
	return l, true
}

type fastParser struct {
	s string
	i int
}

func (p *fastParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// byte skips spaces and then c, reporting whether it was there.
func (p *fastParser) byte(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a JSON string without escapes or control characters.
func (p *fastParser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// fields reads {"f":"v",...} or [["f","v"],...] with string values.
func (p *fastParser) fields() ([]string, bool) {
	switch {
	case p.byte('{'):
		return p.pairs('}', ':', false)
	case p.byte('['):
		return p.pairs(']', ',', true)
	}
	return nil, false
}

// pairs reads the rest of an object (sep ':') or of a list of
// ["f","v"] pairs (sep ',', each pair bracketed), up to end.
func (p *fastParser) pairs(end, sep byte, bracketed bool) ([]string, bool) {
	if p.byte(end) {
		return nil, true
	}
	out := make([]string, 0, 4) // two fields without growing
	for {
		if bracketed && !p.byte('[') {
			return nil, false
		}
		k, ok := p.str()
		if !ok || !p.byte(sep) {
			return nil, false
		}
		v, ok := p.str()
		if !ok || bracketed && !p.byte(']') {
			return nil, false
		}
		out = append(out, k, v)
		if !p.byte(',') {
			return out, p.byte(end)
		}
	}
}
