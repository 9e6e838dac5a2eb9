package records

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// HTTP idempotency middlewares store the request and the response they
// replay. Their records say where the response came from (HTTPStatus) and
// flag error responses, which replay as errors while the record reads
// COMPLETED: the request completed, with an error.

// maxErrorText bounds the message taken from a stored error response.
const maxErrorText = 200

// isExpress recognises express-idempotency's IdempotencyResource as its
// Redis adapters store it (the key is the bare idempotency key):
// express-idempotency v2.0.0 src/models/models.ts (IdempotencyResource:
// request {body, headers, method, query, url}, response? {statusCode,
// headers, body}; a createdAt, where a record has one, is its only time:
// v2.0.0 writes none) and express-idempotency-redis-adapter 1.0.8
// src/index.ts (#createOrUpdate: JSON.stringify of the resource without
// idempotencyKey, SET EX ttl). It has no status member: the response's
// presence is the status.
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
	_, method := rm["method"]
	_, url := rm["url"]
	_, headers := rm["headers"]
	if !method && !url && !headers {
		return false
	}
	if resp, ok := m["response"]; ok && resp != "null" {
		_, ok := jsonObject(resp)
		return ok
	}
	return true
}

// decodeExpress: PROCESSING while the request is in flight (no response),
// COMPLETED once the response is stored; createdAt (ISO 8601) is the only
// time, and older versions write none.
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

// isNodeIdempotency recognises @node-idempotency's StoragePayload (read
// at @node-idempotency/core 1.0.11, storage-adapter-redis 1.0.5;
// packages/core/src/types.ts: status IN_PROGRESS|COMPLETE, fingerPrint?,
// response? {body?, additional? {statusCode, cached headers}, error?}),
// written by packages/core/src/idempotency.ts (onRequest: SET NX PX of
// {status: IN_PROGRESS, fingerPrint}; onResponse: SET PX of {status:
// COMPLETE, fingerPrint, response}) through
// packages/storage-adapter-redis/src/adapter-redis.ts at
// "node-idempotency:METHOD:PATH:KEY" (cacheKeyPrefix). Its exact status
// words, with a fingerPrint, a response object or the default key prefix,
// tell it from other JSON records.
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

// decodeNodeIdempotency: a stored error response (the express plugin keeps
// the body of a status >= 400 as error, @node-idempotency/express 1.0.7
// middleware.ts handleResponse; the NestJS interceptor, plugin-nestjs 1.0.8,
// keeps the thrown HttpException, whose message it has)
// is COMPLETED with the error-response flag and "HTTP 402: message" in
// Error. The record carries no time: its age is unknown.
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
// 5xx response or an explicit error, the error-response flag and Error
// ("HTTP 402: message").
func setHTTPOutcome(r *Record, code int, errBody string, explicitError bool) {
	r.HTTPStatus = code
	if !explicitError && code < 400 {
		return
	}
	r.Flags = append(r.Flags, FlagErrorResponse)
	msg := errorMessage(errBody)
	switch {
	case code > 0 && msg != "":
		r.Error = fmt.Sprintf("HTTP %d: %s", code, msg)
	case code > 0:
		r.Error = fmt.Sprintf("HTTP %d", code)
	case msg != "":
		r.Error = msg
	default:
		r.Error = "error response"
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

// errorMessage finds the message of a stored error: the body itself when it
// is a string, else the first of the usual members (message, error,
// detail, ...), following nested objects, arrays of messages (NestJS
// validation errors) and JSON kept as text (express's res.json body).
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

// ResultSummary says in a few words what outcome the record stores, for
// inspect's result line: "HTTP 201, 57 bytes", "HTTP 402" (an error
// response whose body was not measured), "57 bytes", or "" when it stores
// none.
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
