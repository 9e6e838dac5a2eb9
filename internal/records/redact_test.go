package records

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	for _, n := range []string{"authorization", "Authorization", "proxy-authorization", "cookie", "Cookie", "set-cookie",
		"Set-Cookie", "x-api-key", "X_API_KEY", "apiKey", "api_key", "password", "Password", "db_password", "passwd",
		"token", "access_token", "refreshToken", "x-auth-token", "X-CSRF-Token", "x-amz-security-token", "client_secret",
		"secret", "privateKey", "credentials"} {
		if !IsSecretName(n) {
			t.Errorf("%q not secret", n)
		}
	}
	for _, n := range []string{"host", "content-type", "idempotency-key", "x-request-id", "status", "owner", "tokens",
		"user", "amount", "key", "", strings.Repeat("a", 60) + "token" + strings.Repeat("a", 10)} {
		if IsSecretName(n) {
			t.Errorf("%q secret", n)
		}
	}
}

// RedactJSON is Redact for the JSON text s (redactJSONText at the top).
func RedactJSON(s string) (out string, changed bool) { return redactJSONText(s, 0) }

func TestRedactJSON(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"express request headers", expressRequest,
			strings.Replace(expressRequest, `"Bearer sk_live_51H8"`, `"[redacted]"`, 1)},
		{"spacing and order kept", "{ \"b\" : 1,\n  \"Cookie\" :\t\"sid=abc\" , \"a\":[ true ,null ] }",
			"{ \"b\" : 1,\n  \"Cookie\" :\t\"[redacted]\" , \"a\":[ true ,null ] }"},
		{"set-cookie array keeps its length", `{"set-cookie":["a=1; HttpOnly","b=2"],"n":[{"x-api-key":"k"}]}`,
			`{"set-cookie":["[redacted]","[redacted]"],"n":[{"x-api-key":"[redacted]"}]}`},
		{"objects and numbers", `{"password":{"old":"a","new":"b"},"token":123456,"secret":null,"apiKey":""}`,
			`{"password":"[redacted]","token":"[redacted]","secret":null,"apiKey":""}`},
		{"JSON kept as text", `{"data":"{\"headers\":{\"Authorization\":\"Basic dXNlcjpwdw==\"},\"body\":\"<b>&</b>\"}"}`,
			`{"data":"{\"headers\":{\"Authorization\":\"[redacted]\"},\"body\":\"<b>&</b>\"}"}`},
		{"escaped key", `{"pass\u0077ord":"hunter2"}`, `{"pass\u0077ord":"[redacted]"}`},
		{"top-level array", `[{"token":"t1"},{"id":2}]`, `[{"token":"[redacted]"},{"id":2}]`},
	} {
		got, changed := RedactJSON(tc.in)
		if got != tc.want || !changed {
			t.Errorf("%s:\n got %s (changed %v)\nwant %s", tc.name, got, changed, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: invalid JSON %s", tc.name, got)
		}
	}
	for _, in := range []string{`{"host":"h","n":[1,2]}`, `not json`, `{"password":`, `"password"`, ``, `[]`} {
		if got, changed := RedactJSON(in); got != in || changed {
			t.Errorf("RedactJSON(%q) = %q, %v", in, got, changed)
		}
	}
}

func TestRedactRecord(t *testing.T) {
	// express-idempotency keeps the request's headers, Authorization included.
	r := Decode("k-1", "string", str(expressRecord("", true)), 86400000, now)
	before := maps.Clone(r.Fields)
	red := Redact(r)
	if strings.Contains(red.Fields["request"], "sk_live") || !strings.Contains(red.Fields["request"], `"authorization":"[redacted]"`) {
		t.Errorf("request not redacted: %s", red.Fields["request"])
	}
	if !maps.Equal(r.Fields, before) {
		t.Error("Redact changed its input's Fields")
	}
	if red.Fields["createdAt"] != before["createdAt"] || red.Status != r.Status || red.Format != r.Format {
		t.Errorf("other parts changed: %+v", red)
	}

	// Hash fields: idmpctl's fencing token stays; secrets in fields go.
	h := hash("status", "COMPLETED", "token", "3", "owner", "w", "password", "hunter2", "X-Api-Key", "k",
		"result", `{"set-cookie":["sid=1"],"ok":true}`, "empty_secret", "")
	r = Decode("idem:1", "hash", h, 1000, now)
	red = Redact(r)
	want := map[string]string{"status": "COMPLETED", "token": "3", "owner": "w", "password": Redacted, "X-Api-Key": Redacted,
		"result": `{"set-cookie":["[redacted]"],"ok":true}`, "empty_secret": ""}
	if !maps.Equal(red.Fields, want) {
		t.Errorf("hash:\n got %v\nwant %v", red.Fields, want)
	}
	if h.Hash["password"] != "hunter2" {
		t.Error("Redact changed the raw value's map")
	}
	// A token that is no integer is a secret even at the top level.
	r = Decode("idem:2", "string", str(`{"status":"DONE","token":"tok_abc","cookie":["a","b"]}`), 1000, now)
	if red := Redact(r); red.Fields["token"] != Redacted || red.Fields["cookie"] != `["[redacted]","[redacted]"]` {
		t.Errorf("json: %v", red.Fields)
	}
	// Nothing to redact: the same map comes back.
	r = Decode("idem:3", "hash", hash("status", "DONE"), 1000, now)
	if red := Redact(r); !maps.Equal(red.Fields, r.Fields) {
		t.Errorf("unchanged record changed: %v", red.Fields)
	}
}

// secretsLeft reports a secret-named member whose value was kept, following
// JSON kept as text the way RedactJSON does.
func secretsLeft(v any, nest int) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if IsSecretName(k) && !redactedShape(e) || secretsLeft(e, nest) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if secretsLeft(e, nest) {
				return true
			}
		}
	case string:
		t := strings.TrimSpace(x)
		if nest < maxStringNest && t != "" && (t[0] == '{' || t[0] == '[') {
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				return secretsLeft(inner, nest+1)
			}
		}
	}
	return false
}

func redactedShape(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == "" || x == Redacted
	case []any:
		for _, e := range x {
			if !redactedShape(e) {
				return false
			}
		}
		return true
	}
	return false
}

func FuzzRedactJSON(f *testing.F) {
	f.Add(expressRequest)
	f.Add(`{"data":"{\"headers\":{\"Authorization\":\"Basic x\"},\"n\":\"[{\\\"token\\\":1}]\"}"}`)
	f.Add(`{"set-cookie":["a",["b",{"c":1}]],"password":{"token":"x"}}`)
	f.Add(`[{"Cookie":"\u00e9\ud800"}, "{\"secret\":1}"]`)
	f.Add("{\"token\":\"\xff\"}")
	f.Fuzz(func(t *testing.T, s string) {
		out, changed := RedactJSON(s)
		if !changed && out != s {
			t.Fatal("unchanged but different")
		}
		if !json.Valid([]byte(s)) {
			if changed {
				t.Fatal("changed invalid JSON")
			}
			return
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("invalid output %q", out)
		}
		if again, changed := RedactJSON(out); changed {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
		var v any
		if json.Unmarshal([]byte(out), &v) == nil && secretsLeft(v, 0) {
			t.Fatalf("secret left in %q", out)
		}
		r := Redact(Record{Fields: map[string]string{"request": s, "password": s, "token": s}})
		if r.Fields["request"] != out {
			t.Fatalf("Redact and RedactJSON disagree")
		}
	})
}
