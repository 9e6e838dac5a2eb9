package render

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Field makes a value that came from Redis (a key name, an owner, an error
// text) safe to print as one field of a line: raw output stays one record a
// line and tab-separated, and a terminal never receives control sequences.
//
// A value that is valid UTF-8, holds only printable characters (spaces
// included) and does not start with a double quote is printed as is: the
// exact bytes, as before. Anything else (a newline, a tab, ESC, a NUL,
// invalid UTF-8, a leading '"') is printed double-quoted with Go escapes
// (strconv.Quote: "a\nb", "\xff"), so a field that starts with '"' is always
// quoted and strconv.Unquote (or any C-style unquoter) restores the bytes.
// This is git's rule for unusual path names (core.quotePath).
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

// ShellWord is s as one word of a command line a user copies into a POSIX
// shell: as is when it holds only characters no shell reads specially,
// else in single quotes (a single quote inside closes, escapes and reopens
// them). A command idmpctl prints for the user to run (the undo of a
// purge) names its file this way.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
