package records

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxErrorText bounds the message taken from a stored error response.
const maxErrorText = 200

// isExpress recognises express-idempotency's IdempotencyResource (v2.0.0
// src/models/models.ts: request {method, url, headers...}, response?
// {statusCode, body...}) as express-idempotency-redis-adapter 1.0.8 SETs
// it at the bare key. It has no status: a response's presence is one.
func isExpress(m map[string]string) bool {
	if _, ok := lookup(m, statusNames...); ok {
		return false
	}
	req, ok := m["request"]
	if !ok {
		return false
	}
	rm, ok := jsonObject(req)
	if !ok {
		return false
	}
	if !slices.ContainsFunc([]string{"method", "url", "headers"}, func(k string) bool { _, ok := rm[k]; return ok }) {
		return false
	}
	if resp, ok := m["response"]; ok && resp != "null" {
		_, ok := jsonObject(resp)
		return ok
	}
	return true
}

// decodeExpress: PROCESSING until the response is stored; createdAt, where
// present (v2.0.0 writes none), is the only time.
func decodeExpress(r *Record, m map[string]string) {
	r.Format, r.Status = FormatExpress, Processing
	decodeGeneric(r, m)
	resp, ok := m["response"]
	if !ok || resp == "null" {
		return
	}
	r.Status = Completed
	rm, _ := jsonObject(resp)
	setHTTPOutcome(r, httpStatusCode(rm["statusCode"]), rm["body"], false)
}

// isNodeIdempotency recognises @node-idempotency's StoragePayload (core
// 1.0.11 src/types.ts: status IN_PROGRESS|COMPLETE, fingerPrint?, response?
// {body?, additional? {statusCode}, error?}), SET by storage-adapter-redis
// 1.0.5 at "node-idempotency:METHOD:PATH:KEY": its exact status words with a
// fingerPrint, a response object or that key prefix.
func isNodeIdempotency(key string, m map[string]string) bool {
	if st := m["status"]; st != "IN_PROGRESS" && st != "COMPLETE" {
		return false
	}
	if _, ok := m["fingerPrint"]; ok {
		return true
	}
	if resp, ok := m["response"]; ok {
		if _, ok := jsonObject(resp); ok {
			return true
		}
	}
	return strings.HasPrefix(key, "node-idempotency:")
}

// decodeNodeIdempotency: a stored error (the body of a status >= 400 in
// express 1.0.7, the thrown HttpException in plugin-nestjs 1.0.8) is
// COMPLETED, flagged error-response, "HTTP 402: message" in Error. The
// record carries no time.
func decodeNodeIdempotency(r *Record, m map[string]string) {
	r.Format, r.RawStatus = FormatNodeIdempotency, m["status"]
	r.Status = NormaliseStatus(r.RawStatus)
	r.Fingerprint = m["fingerPrint"]
	resp, ok := m["response"]
	if !ok || resp == "null" {
		return
	}
	r.HasResult, r.ResultBytes = true, len(resp)
	rm, ok := jsonObject(resp)
	if !ok || r.Status != Completed {
		return
	}
	add, _ := jsonObject(rm["additional"])
	code := httpStatusCode(add["statusCode"])
	if e, ok := rm["error"]; ok && e != "null" {
		setHTTPOutcome(r, code, e, true)
		return
	}
	setHTTPOutcome(r, code, rm["body"], false)
}

// setHTTPOutcome records a stored response's status code and, for a 4xx or
// 5xx response or an explicit error, the error-response flag and Error.
func setHTTPOutcome(r *Record, code int, errBody string, explicitError bool) {
	r.HTTPStatus = code
	if !explicitError && code < 400 {
		return
	}
	r.Flags = append(r.Flags, FlagErrorResponse)
	msg := errorMessage(errBody)
	r.Error = cmp.Or(msg, "error response")
	if code > 0 {
		r.Error = fmt.Sprintf("HTTP %d", code)
		if msg != "" {
			r.Error += ": " + msg
		}
	}
}

// httpStatusCode reads a stored status code; 0 when it is not one.
func httpStatusCode(s string) int {
	n := looseInt(s)
	if n < 100 || n > 999 {
		return 0
	}
	return int(n)
}

// errorMessage finds a stored error's message: a string body, else the
// first usual member (messageNames), through nested objects, arrays of
// messages (NestJS validation) and JSON kept as text (express's res.json).
func errorMessage(raw string) string {
	var v any
	if json.Unmarshal([]byte(strings.TrimSpace(raw)), &v) != nil {
		v = raw // not JSON: the text itself
	}
	return clip(strings.TrimSpace(messageOf(v, 0)), maxErrorText)
}

var messageNames = []string{"message", "error", "detail", "title", "reason", "description", "msg", "response", "body"}

func messageOf(v any, depth int) string {
	if depth > 4 {
		return ""
	}
	switch x := v.(type) {
	case string:
		if t := strings.TrimSpace(x); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var inner any
			if json.Unmarshal([]byte(t), &inner) == nil {
				return messageOf(inner, depth+1)
			}
		}
		return x
	case []any:
		var parts []string
		for _, e := range x {
			if s, ok := e.(string); ok && s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		// A NestJS HttpException keeps the detail (validation messages) in
		// response; its message is the generic "Bad Request Exception".
		if name, _ := x["name"].(string); strings.HasSuffix(name, "Exception") {
			if m := messageOf(x["response"], depth+1); m != "" {
				return m
			}
		}
		for _, n := range messageNames {
			if m := messageOf(x[n], depth+1); m != "" {
				return m
			}
		}
	}
	return ""
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ResultSummary is the stored outcome for inspect's result line: "HTTP 201,
// 57 bytes", "HTTP 402", "57 bytes", or "" when it stores none.
func (r Record) ResultSummary() string {
	var parts []string
	if r.HTTPStatus > 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d", r.HTTPStatus))
	}
	if r.HasResult {
		parts = append(parts, fmt.Sprintf("%d bytes", r.ResultBytes))
	}
	return strings.Join(parts, ", ")
}
