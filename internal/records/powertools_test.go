package records

import (
	"slices"
	"testing"
)

func TestParsePowertoolsAttrs(t *testing.T) {
	def := DefaultPowertoolsAttrs()
	for in, want := range map[string]PowertoolsAttrs{
		"":    def,
		"   ": def,
		"status=st,expiry=exp,in_progress_expiry=ipe,data=d,validation=v": {Status: "st", Expiry: "exp",
			InProgressExpiry: "ipe", Data: "d", Validation: "v"},
		// Powertools' own option names, TypeScript and Python, any spacing.
		" statusAttr = state , inProgressExpiryAttr=deadline_ms,validation_key_attr=hash": {Status: "state",
			Expiry: "expiration", InProgressExpiry: "deadline_ms", Data: "data", Validation: "hash"},
		"EXPIRY=ttl,in-progress-expiry=ipe": {Status: "status", Expiry: "ttl", InProgressExpiry: "ipe", Data: "data",
			Validation: "validation"},
		"data=response": {Status: "status", Expiry: "expiration", InProgressExpiry: "in_progress_expiration",
			Data: "response", Validation: "validation"},
	} {
		got, err := ParsePowertoolsAttrs(in)
		if err != nil || got != want {
			t.Errorf("ParsePowertoolsAttrs(%q) = %+v, %v; want %+v", in, got, err, want)
			continue
		}
		if again, err := ParsePowertoolsAttrs(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q: %+v, %v", got.String(), again, err)
		}
	}
	for in, wantErr := range map[string]string{
		"bogus=x":               `unknown role "bogus": want status, expiry, in_progress_expiry, data or validation`,
		"status=":               "status: empty attribute name",
		"status":                `"status": want ROLE=ATTRIBUTE, e.g. status=state`,
		"=x":                    `"=x": want ROLE=ATTRIBUTE, e.g. status=state`,
		"status=st,,expiry=e":   `"": want ROLE=ATTRIBUTE, e.g. status=state`,
		"status=a,statusAttr=b": "status given twice",
		"status=data":           `attribute "data" names both status and data`,
		"data=x,validation=x":   `attribute "x" names both data and validation`,
	} {
		if _, err := ParsePowertoolsAttrs(in); err == nil || err.Error() != wantErr {
			t.Errorf("ParsePowertoolsAttrs(%q) error %v, want %q", in, err, wantErr)
		}
	}
}

// A Powertools record written with custom attribute names, as
// CachePersistenceLayer ({statusAttr: 'st', expiryAttr: 'exp',
// inProgressExpiryAttr: 'ipe', validationKeyAttr: 'h', dataAttr: 'out'})
// writes it: #putInProgressRecord, then _updateRecord.
func TestDecodePowertoolsCustomAttrs(t *testing.T) {
	attrs, err := ParsePowertoolsAttrs("status=st,expiry=exp,in_progress_expiry=ipe,validation=h,data=out")
	if err != nil {
		t.Fatal(err)
	}
	opts := DecodeOptions{Powertools: attrs}
	inflight := `{"st":"INPROGRESS","exp":1700003600,"ipe":1700000000123,"h":"5eff007a"}`
	done := `{"out":"{\"statusCode\":200}","st":"COMPLETED","exp":1700003600}`

	if r := Decode("fn#c1", "string", str(inflight), 3500000, now); r.Format != FormatUnknown {
		t.Errorf("default names took %s for %s", inflight, r.Format)
	}
	r := DecodeWith(opts, "fn#c1", "string", str(inflight), 3500000, now)
	if r.Format != FormatPowertools || r.Status != Processing || r.RawStatus != "INPROGRESS" || r.ExpiresMs != 1700003600000 ||
		r.DeadlineMs != 1700000000123 || r.Fingerprint != "5eff007a" || !r.HasFlag(FlagStale) {
		t.Errorf("in flight: %+v", r)
	}
	if left, known := r.LeaseLeftMs(); !known || left != 1700000000123-now {
		t.Errorf("lease-left %d, %v", left, known)
	}
	r = DecodeWith(opts, "fn#c2", "string", str(done), 3500000, now)
	if r.Format != FormatPowertools || r.Status != Completed || !r.HasResult || r.ResultBytes != 18 {
		t.Errorf("completed: %+v", r)
	}
	// Records with the default names are still recognised.
	r = DecodeWith(opts, "fn#c3", "string", str(`{"status":"COMPLETED","expiration":1699999999,"data":"x"}`), 1000, now)
	if r.Format != FormatPowertools || r.Status != Expired {
		t.Errorf("default names with options: %+v", r)
	}
}

func TestDecodedFieldsWith(t *testing.T) {
	attrs, _ := ParsePowertoolsAttrs("status=st,expiry=exp,in_progress_expiry=ipe,validation=h,data=out")
	fields := DecodedFieldsWith(DecodeOptions{Powertools: attrs})
	for _, n := range []string{"st", "exp", "ipe", "h", "status", "token", "lease_until"} {
		if !slices.Contains(fields, n) {
			t.Errorf("lacks %q", n)
		}
	}
	if slices.Contains(fields, "out") || slices.Contains(fields, "data") {
		t.Error("a payload among the decoded fields")
	}
	if got := DecodedFieldsWith(DecodeOptions{}); !slices.Equal(got, DecodedFields()) {
		t.Errorf("default options: %v", got)
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f] {
			t.Errorf("duplicate %q", f)
		}
		seen[f] = true
	}
}

func FuzzPowertoolsAttrs(f *testing.F) {
	f.Add("status=st,expiry=exp,in_progress_expiry=ipe", `{"st":"INPROGRESS","exp":1700003600,"ipe":1700000000123}`)
	f.Add("statusAttr=status,dataAttr=expiration", `{"status":"COMPLETED","expiration":1}`)
	f.Add("validation=\xff,data= x ", `{"\xff":"h"," x ":null,"status":"EXPIRED","expiration":"1e999"}`)
	f.Add("status==,expiry=,", `{"=":"INPROGRESS"}`)
	f.Fuzz(func(t *testing.T, spec, record string) {
		a, err := ParsePowertoolsAttrs(spec)
		if err != nil {
			if a != (PowertoolsAttrs{}) {
				t.Fatalf("error %v with attrs %+v", err, a)
			}
			return
		}
		names := []string{a.Status, a.Expiry, a.InProgressExpiry, a.Data, a.Validation}
		for i, n := range names {
			if n == "" || slices.Contains(names[i+1:], n) {
				t.Fatalf("attrs %+v", a)
			}
		}
		if again, err := ParsePowertoolsAttrs(a.String()); err != nil || again != a {
			t.Fatalf("round trip %q: %+v, %v", a.String(), again, err)
		}
		r := DecodeWith(DecodeOptions{Powertools: a}, "fn#x", "string", RawValue{String: &record, StringLen: int64(len(record))}, 1000, now)
		checkInvariants(t, r)
	})
}
