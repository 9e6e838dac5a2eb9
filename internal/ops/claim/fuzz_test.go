package claim

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// FuzzParseReply feeds parseReply arbitrary replies (any length,
// any element types, binary strings, nested arrays): it must never panic,
// must accept only the documented shape, and what it builds from an
// accepted reply (errors, lost and not-a-claim explanations) must not panic
// either.
//
//	make fuzz (or: go test ./internal/ops/claim -run '^$' -fuzz FuzzParseReply -fuzztime 2m)
func FuzzParseReply(f *testing.F) {
	f.Add("job:1", encodeFuzzReply("ok", int64(1700000000000), int64(3600000), "hash",
		"status", "PROCESSING", "owner", "w1", "token", "1", "attempts", "1", "lease_until", "1700000060000",
		"created", "1700000000000", "updated", "1700000000000"))
	f.Add("job:1", encodeFuzzReply("done", int64(1), int64(-1), "hash", "status", "COMPLETED", "token", "2", "result", "\x00\xff"))
	f.Add("job:2", encodeFuzzReply("released", int64(1), int64(-2), "none"))
	f.Add("k", encodeFuzzReply("foreign", int64(1), int64(-1), "string"))
	f.Add("k", encodeFuzzReply("foreign", int64(1), int64(-1), "hash", "state", "x"))
	f.Add("k", encodeFuzzReply("lost", int64(1), int64(5), "hash", "status", "FAILED", "token", "9", "owner", "w"))
	f.Add("k", encodeFuzzReply("takeover", int64(1), int64(5), "w0", "token", "-9223372036854775808", "attempts", "x"))
	f.Add("", encodeFuzzReply("ok", "1", int64(1), "hash"))
	f.Add("k", encodeFuzzReply("ok", int64(1), int64(1), nil, "f"))
	f.Add("k", []byte{})
	f.Add("k", []byte{4, 4, 4, 4, 4, 4, 4, 4})

	f.Fuzz(func(t *testing.T, key string, blob []byte) {
		v := decodeFuzzReply(&blob, 0)
		rep, err := parseReply(key, v)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if len(v) < 4 || len(v)%2 != 0 {
			t.Fatalf("accepted a reply of %d elements", len(v))
		}
		if rep.record.Key != key || rep.outcome != v[0] || rep.extra != v[3] {
			t.Fatalf("record %+v from %v", rep, v)
		}
		if len(rep.fields) > (len(v)-4)/2 {
			t.Fatalf("%d fields from %d elements", len(rep.fields), len(v))
		}
		if _, ok := rep.fields["result"]; ok != rep.record.HasResult && rep.record.TTLms != -2 {
			t.Fatalf("HasResult %v, result field present %v", rep.record.HasResult, ok)
		}
		// What the callers build from a parsed reply.
		for _, token := range []int64{0, 1, rep.record.Token} {
			_, err := rep.settle("claim", token, "ok")
			if err != nil && err.Error() == "" {
				t.Fatal("settle: an error without a message")
			}
			var le *LostError
			if errors.As(err, &le) && le.Error() == "" {
				t.Fatal("LostError without a message")
			}
		}
		nc := rep.notClaim("claim")
		if !errors.Is(nc, ErrNotRecord) || exit.Code(nc) != exit.Data {
			t.Fatalf("notClaim: %v (exit %d)", nc, exit.Code(nc))
		}
		_ = rep.record.LeaseLeftMs()
		_ = rep.record.Stale()
	})
}

// Element tags of the fuzz reply encoding.
const (
	replyString = iota
	replyInt
	replyNil
	replyArray
	replyError
	replyFloat
	replyBool
	replyTags
)

// encodeFuzzReply writes a seed: strings, int64s and nil as decodeFuzzReply reads them.
func encodeFuzzReply(elems ...any) []byte {
	b := binary.AppendUvarint(nil, uint64(len(elems)))
	for _, e := range elems {
		switch e := e.(type) {
		case string:
			b = append(b, replyString)
			b = binary.AppendUvarint(b, uint64(len(e)))
			b = append(b, e...)
		case int64:
			b = append(b, replyInt)
			b = binary.AppendVarint(b, e)
		case nil:
			b = append(b, replyNil)
		}
	}
	return b
}

// decodeFuzzReply turns bytes into a reply as go-redis returns it: a count,
// then tagged elements (strings, int64s, nils, nested arrays, error
// replies, floats, bools). Short input ends the array early.
func decodeFuzzReply(b *[]byte, depth int) []any {
	n, k := binary.Uvarint(*b)
	if k <= 0 {
		return nil
	}
	*b = (*b)[k:]
	n = min(n, 64)
	out := make([]any, 0, n)
	for range n {
		if len(*b) == 0 {
			break
		}
		tag := (*b)[0] % replyTags
		*b = (*b)[1:]
		switch tag {
		case replyString, replyError:
			l, k := binary.Uvarint(*b)
			if k <= 0 {
				l, k = 0, 0
			}
			*b = (*b)[k:]
			l = min(l, uint64(len(*b)))
			s := string((*b)[:l])
			*b = (*b)[l:]
			if tag == replyError {
				out = append(out, errors.New(s)) // as go-redis gives a nested error reply
			} else {
				out = append(out, s)
			}
		case replyInt:
			x, k := binary.Varint(*b)
			if k <= 0 {
				x, k = 0, 0
			}
			*b = (*b)[k:]
			out = append(out, x)
		case replyNil:
			out = append(out, nil)
		case replyArray:
			if depth < 3 {
				out = append(out, decodeFuzzReply(b, depth+1))
			} else {
				out = append(out, []any{})
			}
		case replyFloat:
			x, k := binary.Varint(*b)
			*b = (*b)[max(k, 0):]
			out = append(out, float64(x)/7)
		case replyBool:
			out = append(out, len(*b)%2 == 0)
		}
	}
	return out
}
