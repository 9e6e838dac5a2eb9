package exec

// GlobMatch is Redis's stringmatchlen, as CONFIG GET matches parameter
// names against its patterns (nocase): * ? [abc] [^a] [a-z] and \x.
func GlobMatch(pattern, s string, nocase bool) bool {
	budget := 10000 // bounds the backtracking of many stars
	return globMatch(pattern, s, nocase, &budget)
}

func globMatch(p, s string, nocase bool, budget *int) bool {
	fold := func(c byte) byte {
		if nocase && 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for len(p) > 0 {
		if *budget--; *budget < 0 {
			return false
		}
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(p[1:], s[i:], nocase, budget) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' {
				switch {
				case p[0] == '\\' && len(p) >= 2:
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				case len(p) >= 3 && p[1] == '-':
					lo, hi := fold(p[0]), fold(p[2])
					if lo > hi {
						lo, hi = hi, lo
					}
					if c := fold(s[0]); lo <= c && c <= hi {
						match = true
					}
					p = p[2:]
				default:
					if fold(p[0]) == fold(s[0]) {
						match = true
					}
				}
				p = p[1:]
			}
			if len(p) == 0 {
				return false // Redis reads an unclosed class to the end as well
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || fold(p[0]) != fold(s[0]) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	return len(s) == 0
}
