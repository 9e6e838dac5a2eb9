package records

import (
	"fmt"
	"slices"
	"strings"
)

// AWS Powertools for Lambda keeps one JSON string per idempotency key, SET
// with EX until its expiration: Python's RedisCachePersistenceLayer
// (powertools-lambda-python v3.2.0, persistence/redis.py) and TypeScript's
// CachePersistenceLayer (powertools-lambda-typescript v2.35.0,
// packages/idempotency/src/persistence/CachePersistenceLayer.ts). Both let
// the attribute names be chosen (status_attr/statusAttr, expiry_attr, ...).

// PowertoolsAttrs names the attributes of a Powertools record. An empty
// name is the default (DefaultPowertoolsAttrs).
type PowertoolsAttrs struct {
	Status           string // status: INPROGRESS, COMPLETED (EXPIRED internally)
	Expiry           string // the record's expiry, Unix seconds
	InProgressExpiry string // the in-progress deadline, Unix ms
	Data             string // the stored response (JSON text)
	Validation       string // the payload hash, when validation is on
}

// powertoolsRoleNames name the roles of PowertoolsAttrs.fields, in order.
var powertoolsRoleNames = []string{"status", "expiry", "in_progress_expiry", "data", "validation"}

func (a *PowertoolsAttrs) fields() []*string {
	return []*string{&a.Status, &a.Expiry, &a.InProgressExpiry, &a.Data, &a.Validation}
}

// DefaultPowertoolsAttrs are Powertools' own names
// (PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS in TypeScript, the constructor
// defaults in Python).
func DefaultPowertoolsAttrs() PowertoolsAttrs {
	return PowertoolsAttrs{Status: "status", Expiry: "expiration", InProgressExpiry: "in_progress_expiration",
		Data: "data", Validation: "validation"}
}

// withDefaults fills the names not given.
func (a PowertoolsAttrs) withDefaults() PowertoolsAttrs {
	d := DefaultPowertoolsAttrs()
	for i, f := range a.fields() {
		if *f == "" {
			*f = *d.fields()[i]
		}
	}
	return a
}

// powertoolsRoles maps the names ParsePowertoolsAttrs accepts, lower-case
// with '-' and '_' dropped, to their role (an index of powertoolsRoleNames):
// the short names and Powertools' own option names in both languages.
var powertoolsRoles = map[string]int{
	"status": 0, "statusattr": 0,
	"expiry": 1, "expiration": 1, "expiryattr": 1,
	"inprogressexpiry": 2, "inprogressexpiration": 2, "inprogressexpiryattr": 2,
	"data": 3, "dataattr": 3,
	"validation": 4, "validationkey": 4, "validationkeyattr": 4, "validationattr": 4,
}

// ParsePowertoolsAttrs reads --powertools-attrs: comma-separated
// ROLE=ATTRIBUTE pairs (ROLE: status, expiry, in_progress_expiry, data,
// validation, or Powertools' option names such as statusAttr). Roles not
// given keep their default; "" is all defaults. Unknown roles, empty names,
// a role given twice and two roles sharing one attribute are errors.
func ParsePowertoolsAttrs(s string) (PowertoolsAttrs, error) {
	var a PowertoolsAttrs
	if strings.TrimSpace(s) == "" {
		return a.withDefaults(), nil
	}
	set := a.fields()
	for _, item := range strings.Split(s, ",") {
		name, attr, ok := strings.Cut(item, "=")
		name, attr = strings.TrimSpace(name), strings.TrimSpace(attr)
		if !ok || name == "" {
			return PowertoolsAttrs{}, fmt.Errorf("%q: want ROLE=ATTRIBUTE, e.g. status=state", strings.TrimSpace(item))
		}
		i, known := powertoolsRoles[strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))]
		if !known {
			return PowertoolsAttrs{}, fmt.Errorf("unknown role %q: want status, expiry, in_progress_expiry, data or validation", name)
		}
		role := powertoolsRoleNames[i]
		if attr == "" {
			return PowertoolsAttrs{}, fmt.Errorf("%s: empty attribute name", role)
		}
		if *set[i] != "" {
			return PowertoolsAttrs{}, fmt.Errorf("%s given twice", role)
		}
		*set[i] = attr
	}
	a = a.withDefaults()
	seen := map[string]string{}
	for i, attr := range a.fields() {
		if other, dup := seen[*attr]; dup {
			return PowertoolsAttrs{}, fmt.Errorf("attribute %q names both %s and %s", *attr, other, powertoolsRoleNames[i])
		}
		seen[*attr] = powertoolsRoleNames[i]
	}
	return a, nil
}

// powertoolsAttrs lists the attribute sets to try: the configured one, then
// the defaults.
func (o DecodeOptions) powertoolsAttrs() []PowertoolsAttrs {
	d := DefaultPowertoolsAttrs()
	if a := o.Powertools.withDefaults(); a != d {
		return []PowertoolsAttrs{a, d}
	}
	return []PowertoolsAttrs{d}
}

// Powertools statuses (STATUS_CONSTANTS, Python v3.2.0's
// aws_lambda_powertools/utilities/idempotency/persistence/datarecord.py).
var powertoolsStatus = map[string]Status{"INPROGRESS": Processing, "COMPLETED": Completed, "EXPIRED": Expired}

// isPowertools: every record Powertools writes has its status and expiry.
func isPowertools(m map[string]string, a PowertoolsAttrs) bool {
	_, known := powertoolsStatus[m[a.Status]]
	_, hasExp := m[a.Expiry]
	return known && hasExp
}

// decodePowertools reads a Powertools record: expiry in seconds, in-progress
// expiry in ms (judge makes a record past its expiry EXPIRED).
func decodePowertools(r *Record, m map[string]string, a PowertoolsAttrs) {
	r.Format, r.RawStatus = FormatPowertools, m[a.Status]
	r.Status, r.Fingerprint = powertoolsStatus[r.RawStatus], m[a.Validation]
	r.ExpiresMs, r.DeadlineMs = secondsMs(m[a.Expiry]), millis(m[a.InProgressExpiry])
	if v, ok := m[a.Data]; ok && v != "null" {
		r.HasResult, r.ResultBytes = true, len(v)
	}
}

// DecodedFieldsWith is DecodedFields plus opts' custom Powertools attribute
// names but data (a payload), so a partial hash read matches its DecodeWith.
func DecodedFieldsWith(opts DecodeOptions) []string {
	names := DecodedFields()
	a, d := opts.Powertools.withDefaults(), DefaultPowertoolsAttrs()
	for _, n := range []string{a.Status, a.Expiry, a.InProgressExpiry, a.Validation} {
		custom := n != d.Status && n != d.Expiry && n != d.InProgressExpiry && n != d.Validation
		if custom && !slices.Contains(names, n) && !slices.Contains(resultNames, n) {
			names = append(names, n)
		}
	}
	return names
}
