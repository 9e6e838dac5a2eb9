package batch

// parseFast reads the common shape of a batch line in one pass and one
// allocation for all its strings: {"iid":"...","fields":{"f":"v",...}} or
// with "fields":[["f","v"],...], and an optional "pid", strings without
// escapes. Anything else (an escape, a number, {"b64":...}, a repeated key,
// an error) makes it give up (ok false), and ParseLine's full parser, which
// has the error messages, reads the line. Reading a million lines is most
// of xadd --batch's own time; encoding/json's tokenizer costs several times
// this.
func parseFast(b []byte, auto bool) (l Line, ok bool) {
	// One string for the line: every field is a substring of it.
	s := string(b)
	p := fastParser{s: s}
	if !p.byte('{') {
		return Line{}, false
	}
	seenFields := false
	for first := true; ; first = false {
		p.space()
		if p.peek() == '}' && first {
			break
		}
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return Line{}, false
		}
		switch key {
		case "iid":
			if l.HasIID {
				return Line{}, false
			}
			if l.IID, ok = p.str(); !ok {
				return Line{}, false
			}
			l.HasIID = true
		case "pid":
			if l.HasPID {
				return Line{}, false
			}
			if l.PID, ok = p.str(); !ok || l.PID == "" {
				return Line{}, false
			}
			l.HasPID = true
		case "fields":
			if seenFields {
				return Line{}, false
			}
			seenFields = true
			if l.Fields, ok = p.fields(); !ok {
				return Line{}, false
			}
		default:
			return Line{}, false
		}
		p.space()
		if p.byte(',') {
			continue
		}
		if p.byte('}') {
			break
		}
		return Line{}, false
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

func (p *fastParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
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
	p.space()
	var out []string
	switch {
	case p.byte('{'):
		if p.byte('}') {
			return out, true
		}
		out = make([]string, 0, 4) // two fields without growing
		for {
			k, ok := p.str()
			if !ok || !p.byte(':') {
				return nil, false
			}
			v, ok := p.str()
			if !ok {
				return nil, false
			}
			out = append(out, k, v)
			if p.byte(',') {
				continue
			}
			return out, p.byte('}')
		}
	case p.byte('['):
		if p.byte(']') {
			return out, true
		}
		out = make([]string, 0, 4)
		for {
			if !p.byte('[') {
				return nil, false
			}
			k, ok := p.str()
			if !ok || !p.byte(',') {
				return nil, false
			}
			v, ok := p.str()
			if !ok || !p.byte(']') {
				return nil, false
			}
			out = append(out, k, v)
			if p.byte(',') {
				continue
			}
			return out, p.byte(']')
		}
	}
	return nil, false
}
