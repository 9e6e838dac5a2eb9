package render

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Field makes a value from Redis (a key, an owner, an error text) safe as
// one field of a line: raw output stays one tab-separated record a line, and
// a terminal gets no control sequences. Printable UTF-8 not starting with '"'
// is as is; anything else is strconv.Quote'd, so strconv.Unquote restores
// it (git's core.quotePath rule).
func Field(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	return s
}

func needsQuote(s string) bool {
	if s != "" && s[0] == '"' {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < ' ' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// ShellWord is s as one word of a POSIX shell command the user copies (the
// undo of a purge): as is when no shell reads its characters specially,
// else single-quoted.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
