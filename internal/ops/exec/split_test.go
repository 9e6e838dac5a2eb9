package exec

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzSplitLine holds SplitLine to the character-by-character splitter it
// replaced (splitLineRef), whose words were all copies.
func FuzzSplitLine(f *testing.F) {
	for _, s := range []string{"XADD s IDMP p1 i-1 * f v1\n", `SET "a b" 'c d'`, "a\x00b c", `a"b c"d`, `ab'c'`,
		`"\x41\q" '\'' x`, "\t\v\f a \r\n", `a"`, `a'`, `"a"b`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got, err := SplitLine(line)
		want, werr := splitLineRef(line)
		if err != werr || !reflect.DeepEqual(got, want) {
			t.Fatalf("SplitLine(%q) = %q, %v; the reference splits %q, %v", line, got, err, want, werr)
		}
	})
}

func splitLineRef(line string) ([]string, error) {
	var args []string
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			return args, nil
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			switch {
			case inq:
				switch {
				case p >= len(line):
					return nil, ErrInvalidArgs
				case line[p] == '\\' && p+3 < len(line) && line[p+1] == 'x' && isHex(line[p+2]) && isHex(line[p+3]):
					n, _ := strconv.ParseUint(line[p+2:p+4], 16, 8)
					cur = append(cur, byte(n))
					p += 3
				case line[p] == '\\' && p+1 < len(line):
					p++
					c := line[p]
					if i := strings.IndexByte("nrtba", c); i >= 0 {
						c = "\n\r\t\b\a"[i]
					}
					cur = append(cur, c)
				case line[p] == '"':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, ErrInvalidArgs
					}
					done = true
				default:
					cur = append(cur, line[p])
				}
			case insq:
				switch {
				case p >= len(line):
					return nil, ErrInvalidArgs
				case line[p] == '\\' && p+1 < len(line) && line[p+1] == '\'':
					p++
					cur = append(cur, '\'')
				case line[p] == '\'':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, ErrInvalidArgs
					}
					done = true
				default:
					cur = append(cur, line[p])
				}
			default:
				switch {
				case p >= len(line) || isSpace(line[p]) || line[p] == 0:
					done = true
				case line[p] == '"':
					inq = true
				case line[p] == '\'':
					insq = true
				default:
					cur = append(cur, line[p])
				}
			}
			if p < len(line) {
				p++
			}
		}
		args = append(args, string(cur))
	}
}
