package exec

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalidArgs is a line redis-cli cannot split (an unbalanced quote, a
// closing quote not followed by a space): redis-cli answers such a line
// "Invalid argument(s)" and reads on.
var ErrInvalidArgs = errors.New("Invalid argument(s)")

// SplitLine splits one line of commands as redis-cli does (sdssplitargs):
// words separated by spaces; "double quotes" with \xNN (any byte), \n, \r,
// \t, \b, \a and \<c> (the character c) inside; 'single quotes' with \'
// only. A quote may start inside a word, and must be followed by a space or
// the end of the line when it closes. An empty line gives no words.
func SplitLine(line string) ([]string, error) { return appendSplit(nil, line) }

// appendSplit is SplitLine appending to args; a word without quotes is a
// substring of line.
func appendSplit(args []string, line string) ([]string, error) {
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			return args, nil
		}
		start := p
		for p < len(line) && !wordEnd[line[p]] {
			p++
		}
		if p == len(line) || line[p] != '"' && line[p] != '\'' {
			args = append(args, line[start:p])
			p++ // past the space or NUL that ends it
			continue
		}
		cur := []byte(line[start:p])
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

// wordEnd: the bytes that end or quote a word (isSpace, NUL, quotes).
var wordEnd = [256]bool{' ': true, '\n': true, '\r': true, '\t': true, '\v': true, '\f': true, 0: true, '"': true, '\'': true}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
