package records

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// express-idempotency records as express-idempotency-redis-adapter 1.0.8
// writes them (src/index.ts #createOrUpdate: JSON.stringify of the resource
// minus idempotencyKey, SET key json EX ttl). The resource is
// IdempotencyResource (express-idempotency v2.0.0 src/models/models.ts):
// request is convertToIdempotencyRequest's {body, headers, method, query,
// url} (req.headers as Node gives them, lower-case, Authorization
// included); createdAt, in records that have one, is new Date(), an ISO
// string once stringified (v2.0.0 writes none); response is
// buildIdempotencyResponse's {statusCode, body, headers}
// (idempotencyService.ts), where body is what res.send received: res.json
// passes the JSON text, so body is a string.
const (
	expressRequest = `{"body":{"amount":100,"currency":"EUR"},"headers":{"host":"api.example.com",` +
		`"content-type":"application/json","authorization":"Bearer sk_live_51H8","idempotency-key":"k-1"},` +
		`"method":"POST","query":{},"url":"/orders"}`
	expressCreated = `"createdAt":"2023-11-14T22:13:20.000Z"`
)

func expressRecord(response string, withCreated bool) string {
	s := `{"request":` + expressRequest
	if withCreated {
		s += "," + expressCreated
	}
	if response != "" {
		s += `,"response":` + response
	}
	return s + "}"
}

func TestDecodeExpress(t *testing.T) {
	type httpWant struct {
		format  Format
		status  Status
		code    int
		created int64
		result  int
		errText string
		flags   []Flag
		summary string
	}
	ok201 := `{"statusCode":201,"body":"{\"id\":\"ord_1\"}","headers":{"content-type":"application/json; charset=utf-8"}}`
	declined := `{"statusCode":402,"body":"{\"error\":\"card declined\"}","headers":{"content-type":"application/json; charset=utf-8"}}`
	failed := `{"statusCode":500,"body":"Internal Server Error","headers":{}}`
	for _, tc := range []struct {
		name, value string
		want        httpWant
	}{
		{"in flight", expressRecord("", true),
			httpWant{FormatExpress, Processing, 0, 1700000000000, -1, "", nil, ""}},
		{"in flight, older version without createdAt", expressRecord("", false),
			httpWant{FormatExpress, Processing, 0, 0, -1, "", nil, ""}},
		{"completed 201", expressRecord(ok201, true),
			httpWant{FormatExpress, Completed, 201, 1700000000000, len(ok201), "", nil, fmt.Sprintf("HTTP 201, %d bytes", len(ok201))}},
		// Only a custom responseValidator keeps non-2xx responses (the default
		// SuccessfulResponseValidator deletes the record instead).
		{"completed 402", expressRecord(declined, true),
			httpWant{FormatExpress, Completed, 402, 1700000000000, len(declined), "HTTP 402: card declined", []Flag{FlagErrorResponse}, ""}},
		{"completed 500, text body", expressRecord(failed, false),
			httpWant{FormatExpress, Completed, 500, 0, len(failed), "HTTP 500: Internal Server Error", []Flag{FlagErrorResponse}, ""}},
		{"response null", expressRecord("null", true),
			httpWant{FormatExpress, Processing, 0, 1700000000000, -1, "", nil, ""}},
		{"response without status code", expressRecord(`{"body":"x"}`, true),
			httpWant{FormatExpress, Completed, 0, 1700000000000, 12, "", nil, "12 bytes"}},
		{"request is no object", `{"request":"POST /orders"}`,
			httpWant{FormatUnknown, Unknown, 0, 0, -1, "", nil, ""}},
		{"request without method, url or headers", `{"request":{"a":1}}`,
			httpWant{FormatUnknown, Unknown, 0, 0, -1, "", nil, ""}},
		{"a status member makes it generic json", `{"status":"DONE","request":{"method":"POST"}}`,
			httpWant{FormatJSON, Completed, 0, 0, -1, "", nil, ""}},
		{"response is no object", expressRecord(`"done"`, true),
			httpWant{FormatUnknown, Unknown, 0, 0, -1, "", nil, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Decode("k-1", "string", str(tc.value), 86400000, now)
			got := httpWant{r.Format, r.Status, r.HTTPStatus, r.CreatedMs, r.ResultBytes, r.Error, r.Flags, ""}
			if !r.HasResult {
				got.result = -1
			}
			if tc.want.summary != "" {
				got.summary = r.ResultSummary()
			}
			if tc.want.format == FormatUnknown {
				got.created = 0
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// Without createdAt the age is unknown, not fresh.
	if _, known := Decode("k-1", "string", str(expressRecord("", false)), 86400000, now).AgeMs(); known {
		t.Error("express record without createdAt has a known age")
	}
}

func TestErrorMessage(t *testing.T) {
	for raw, want := range map[string]string{
		`"Payment Required"`:                            "Payment Required",
		`Payment Required`:                              "Payment Required",
		`{"message":"insufficient funds","code":"E42"}`: "insufficient funds",
		`{"error":{"message":"nested"}}`:                "nested",
		`{"response":{"statusCode":400,"message":["amount must be positive","currency missing"]}}`: "amount must be positive; currency missing",
		`"{\"detail\":\"json kept as text\"}"`:                                                     "json kept as text",
		`{"code":42}`:                                                                              "",
		`null`:                                                                                     "",
		``:                                                                                         "",
		`"` + strings.Repeat("é", 150) + `"`:                                                       strings.Repeat("é", 100) + "…",
	} {
		if got := errorMessage(raw); got != want {
			t.Errorf("errorMessage(%q) = %q, want %q", raw, got, want)
		}
	}
}

func FuzzDecodeExpress(f *testing.F) {
	f.Add(expressRequest, `{"statusCode":201,"body":"{\"id\":1}","headers":{}}`, `"2023-11-14T22:13:20.000Z"`)
	f.Add(`{"method":"POST"}`, `{"statusCode":"402","body":{"message":["a","b"]}}`, `1700000000`)
	f.Add(`{"url":"/x","headers":null}`, `null`, `null`)
	f.Add(`{"headers":{"cookie":["a=b"]}}`, `{"statusCode":1e400}`, `"soon"`)
	f.Add(`{"method":"\xff"}`, `{"statusCode":-500,"body":"\"{\\\"error\\\":1}\""}`, `[]`)
	f.Fuzz(func(t *testing.T, request, response, created string) {
		// The parts go in raw, so many inputs are malformed JSON on purpose.
		s := `{"request":` + request + `,"response":` + response + `,"createdAt":` + created + `}`
		r := Decode("k", "string", RawValue{String: &s, StringLen: int64(len(s))}, 1000, now)
		checkInvariants(t, r)
		if r.Format == FormatExpress {
			if r.Status != Processing && r.Status != Completed {
				t.Fatalf("express status %s", r.Status)
			}
			if (r.Status == Completed) != r.HasResult {
				t.Fatalf("status %s, has result %v", r.Status, r.HasResult)
			}
		}
		_ = r.ResultSummary()
	})
}

// @node-idempotency records as its redis storage adapter writes them (read
// at @node-idempotency/core 1.0.11, storage-adapter-redis 1.0.5, express
// 1.0.7, plugin-nestjs 1.0.8; packages/storage-adapter-redis/src/adapter-redis.ts: SET key json NX PX
// ttl, then SET key json PX ttl) at cacheKeyPrefix:METHOD:PATH:KEY
// (packages/core/src/idempotency.ts getIdempotencyCacheKey). The payload is
// StoragePayload (packages/core/src/types.ts); fingerPrint is a blake2s256
// hex of the body. Responses: plugin-express middleware.ts handleResponse
// stores {additional: {statusCode, cached headers}, body} below 400 and
// {additional, error: body} from 400; the NestJS interceptor
// (node-idempotency.interceptor.ts) stores {additional: {statusCode}, error:
// the HttpException}, which JSON.stringify writes as {response, status,
// options, message, name}.
func TestDecodeNodeIdempotency(t *testing.T) {
	const key = "node-idempotency:POST:/payments:k-2"
	const fp = "9a1d2c3b4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
	type nodeWant struct {
		format  Format
		status  Status
		raw     string
		fp      string
		code    int
		errText string
		flags   []Flag
		summary string
	}
	okResp := `{"additional":{"statusCode":201,"content-type":"application/json; charset=utf-8"},"body":{"id":"pay_1"}}`
	expressErr := `{"additional":{"statusCode":402,"content-type":"application/json; charset=utf-8"},"error":{"message":"insufficient funds"}}`
	nestErr := `{"additional":{"statusCode":402},"error":{"response":"insufficient funds","status":402,"options":{},"message":"insufficient funds","name":"HttpException"}}`
	nestValidation := `{"additional":{"statusCode":400},"error":{"response":{"statusCode":400,"message":["amount must be positive"],"error":"Bad Request"},"status":400,"options":{},"message":"Bad Request Exception","name":"BadRequestException"}}`
	for _, tc := range []struct {
		name, key, value string
		want             nodeWant
	}{
		{"in progress", key, `{"status":"IN_PROGRESS","fingerPrint":"` + fp + `"}`,
			nodeWant{FormatNodeIdempotency, Processing, "IN_PROGRESS", fp, 0, "", nil, ""}},
		{"in progress, no body, default prefix", key, `{"status":"IN_PROGRESS"}`,
			nodeWant{FormatNodeIdempotency, Processing, "IN_PROGRESS", "", 0, "", nil, ""}},
		{"in progress, no body, own prefix: generic json", "api:POST:/p:k", `{"status":"IN_PROGRESS"}`,
			nodeWant{FormatJSON, Processing, "IN_PROGRESS", "", 0, "", nil, ""}},
		{"completed 201", key, `{"status":"COMPLETE","fingerPrint":"` + fp + `","response":` + okResp + `}`,
			nodeWant{FormatNodeIdempotency, Completed, "COMPLETE", fp, 201, "", nil, fmt.Sprintf("HTTP 201, %d bytes", len(okResp))}},
		{"express plugin 402", key, `{"status":"COMPLETE","fingerPrint":"` + fp + `","response":` + expressErr + `}`,
			nodeWant{FormatNodeIdempotency, Completed, "COMPLETE", fp, 402, "HTTP 402: insufficient funds", []Flag{FlagErrorResponse}, ""}},
		{"nestjs HttpException 402", "idem:POST:/payments:k-3", `{"status":"COMPLETE","fingerPrint":"` + fp + `","response":` + nestErr + `}`,
			nodeWant{FormatNodeIdempotency, Completed, "COMPLETE", fp, 402, "HTTP 402: insufficient funds", []Flag{FlagErrorResponse}, ""}},
		{"nestjs validation 400", key, `{"status":"COMPLETE","response":` + nestValidation + `}`,
			nodeWant{FormatNodeIdempotency, Completed, "COMPLETE", "", 400, "HTTP 400: amount must be positive", []Flag{FlagErrorResponse}, ""}},
		{"error without status code", key, `{"status":"COMPLETE","response":{"error":"boom"}}`,
			nodeWant{FormatNodeIdempotency, Completed, "COMPLETE", "", 0, "boom", []Flag{FlagErrorResponse}, ""}},
		{"5xx body without error member", key, `{"status":"COMPLETE","response":{"additional":{"statusCode":503},"body":"down"}}`,
			nodeWant{FormatNodeIdempotency, Completed, "COMPLETE", "", 503, "HTTP 503: down", []Flag{FlagErrorResponse}, ""}},
		{"COMPLETED is not its word", key, `{"status":"COMPLETED","fingerPrint":"x"}`,
			nodeWant{FormatJSON, Completed, "COMPLETED", "x", 0, "", nil, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Decode(tc.key, "string", str(tc.value), 86400000, now)
			got := nodeWant{r.Format, r.Status, r.RawStatus, r.Fingerprint, r.HTTPStatus, r.Error, r.Flags, ""}
			if tc.want.summary != "" {
				got.summary = r.ResultSummary()
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
			if _, known := r.AgeMs(); known {
				t.Error("age known for a record without a time")
			}
		})
	}
}

func FuzzDecodeNodeIdempotency(f *testing.F) {
	f.Add("COMPLETE", "9a1d", `{"additional":{"statusCode":402},"error":{"message":"insufficient funds"}}`)
	f.Add("IN_PROGRESS", "", `null`)
	f.Add("COMPLETE", "\xff", `{"additional":{"statusCode":"2e2"},"body":[1,{"error":2}]}`)
	f.Add("COMPLETE", "x", `{"additional":null,"error":{"response":{"message":[1,"a",null]}}}`)
	f.Fuzz(func(t *testing.T, status, fingerprint, response string) {
		// response goes in raw, so many inputs are malformed JSON on purpose.
		s := fmt.Sprintf(`{"status":%q,"fingerPrint":%q,"response":%s}`, status, fingerprint, response)
		for _, key := range []string{"node-idempotency:POST:/p:k", "k"} {
			r := Decode(key, "string", RawValue{String: &s, StringLen: int64(len(s))}, 1000, now)
			checkInvariants(t, r)
			if r.Format == FormatNodeIdempotency && r.Status != Processing && r.Status != Completed {
				t.Fatalf("status %s", r.Status)
			}
		}
	})
}
