package records

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Redacted replaces a secret's value in every output unless the user asked
// for secrets (--show-secrets).
const Redacted = "[redacted]"

// maxStringNest bounds how deep JSON kept as text inside JSON strings is
// followed (a Powertools data member, an express body).
const maxStringNest = 4

// Secret names, compared lower-case with '-', '_', '.' and spaces dropped:
// any name ending in one of these (x-api-key, set-cookie, access_token,
// clientSecret, db_password), and privatekey and credentials exactly.
var (
	secretSuffixes   = []string{"authorization", "cookie", "password", "passwd", "secret", "apikey", "token"}
	secretSeparators = strings.NewReplacer("-", "", "_", "", ".", "", " ", "")
)

// IsSecretName reports whether a header, hash field or JSON member of this
// name holds a secret (credentials, session cookies, API keys, tokens),
// in any case and spelling (Authorization, x-api-key, X_API_KEY, apiKey).
func IsSecretName(name string) bool {
	if len(name) > 64 {
		return false
	}
	n := secretSeparators.Replace(strings.ToLower(name))
	return n == "privatekey" || n == "credentials" ||
		slices.ContainsFunc(secretSuffixes, func(s string) bool { return strings.HasSuffix(n, s) })
}

// Redact returns r with the value of every secret-named field or member in
// Fields, at any depth of the JSON they hold (also JSON kept as text in a
// string), replaced by Redacted; every other byte is kept. An integer in a
// top-level token field is a fencing token, not a secret. r.Fields, which
// callers may share with the raw value they read, is never modified.
func Redact(r Record) Record {
	shared := true
	for k, v := range r.Fields {
		if nv := redactField(k, v); nv != v {
			if shared {
				r.Fields, shared = maps.Clone(r.Fields), false
			}
			r.Fields[k] = nv
		}
	}
	return r
}

func redactField(name, v string) string {
	if IsSecretName(name) {
		if v == "" || slices.Contains(tokenNames, name) && exactIntOK(v) {
			return v // empty, or a fencing token
		}
		if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") && json.Valid([]byte(t)) {
			return string(redactedValue([]byte(t)))
		}
		return Redacted
	}
	out, _ := redactJSONText(v, 0) // v itself when it holds no secret
	return out
}

func exactIntOK(s string) bool {
	s = strings.TrimPrefix(strings.TrimSpace(s), "-")
	return isAllDigits(s) && len(s) <= 19
}

// redactJSONText is Redact for the JSON text s, kept as text nest deep;
// changed is false, and s comes back as it is, when s is not JSON or holds
// no secret.
func redactJSONText(s string, nest int) (out string, changed bool) {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') || !json.Valid([]byte(s)) {
		return s, false
	}
	b := []byte(s)
	w := jsonRedactor{src: b, nest: nest}
	w.value(skipSpace(b, 0))
	w.out = append(w.out, b[w.pos:]...)
	if bytes.Equal(w.out, b) {
		return s, false
	}
	return string(w.out), true
}

// jsonRedactor copies valid JSON from src to out, replacing secret values.
// pos is the next byte of src not yet copied or skipped.
type jsonRedactor struct {
	src, out []byte
	pos      int
	nest     int
}

// copyTo copies src up to i.
func (w *jsonRedactor) copyTo(i int) {
	w.out = append(w.out, w.src[w.pos:i]...)
	w.pos = i
}

// value rewrites the value starting at i (the input is valid JSON) and
// returns the index after it.
func (w *jsonRedactor) value(i int) int {
	switch w.src[i] {
	case '{', '[': // the input is valid: '}' or ']' closes what it opened
		obj := w.src[i] == '{'
		for i = skipSpace(w.src, i+1); w.src[i] != '}' && w.src[i] != ']'; {
			secret := false
			if obj { // a member's name, then ':' before its value
				end := stringEnd(w.src, i)
				var name string
				_ = json.Unmarshal(w.src[i:end], &name)
				i, secret = skipSpace(w.src, skipSpace(w.src, end)+1), IsSecretName(name)
			}
			if secret {
				end := valueEnd(w.src, i)
				w.copyTo(i)
				w.out = append(w.out, redactedValue(w.src[i:end])...)
				w.pos, i = end, end
			} else {
				i = w.value(i)
			}
			if i = skipSpace(w.src, i); w.src[i] == ',' {
				i = skipSpace(w.src, i+1)
			}
		}
		return i + 1
	case '"':
		end := stringEnd(w.src, i)
		if w.nest < maxStringNest {
			w.redactString(i, end)
		}
		return end
	}
	return valueEnd(w.src, i)
}

// redactString follows JSON kept as text in the string src[i:end].
func (w *jsonRedactor) redactString(i, end int) {
	var s string
	if json.Unmarshal(w.src[i:end], &s) != nil {
		return
	}
	inner, changed := redactJSONText(s, w.nest+1)
	if !changed {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(inner) != nil {
		return
	}
	w.copyTo(i)
	w.out = append(w.out, bytes.TrimRight(buf.Bytes(), "\n")...)
	w.pos = end
}

// redactedValue is what replaces a secret's JSON value: null and "" stay
// (they hold nothing), an array keeps its length with each element
// redacted (a set-cookie list), anything else becomes "[redacted]".
func redactedValue(v []byte) []byte {
	switch t := bytes.TrimSpace(v); {
	case string(t) == "null", string(t) == `""`:
		return t
	case len(t) > 0 && t[0] == '[':
		var elems []json.RawMessage
		if json.Unmarshal(t, &elems) != nil {
			break
		}
		out := []byte{'['}
		for j, e := range elems {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(out, redactedValue(e)...)
		}
		return append(out, ']')
	}
	return []byte(`"` + Redacted + `"`)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the JSON string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && strings.IndexByte(",}] \t\n\r", b[j]) < 0 {
		j++
	}
	return j
}
