package records

import (
	"fmt"
	"slices"
	"strings"
)

// AWS Powertools for Lambda keeps one JSON string per idempotency key, SET
// with EX until its expiration: Python's RedisCachePersistenceLayer
// (powertools-lambda-python v3.2.0,
// aws_lambda_powertools/utilities/idempotency/persistence/redis.py,
// _put_in_progress_record and _update_record) and TypeScript's
// CachePersistenceLayer (powertools-lambda-typescript v2.35.0,
// packages/idempotency/src/persistence/CachePersistenceLayer.ts,
// #putInProgressRecord and _updateRecord). Both
// let the attribute names be chosen (status_attr/statusAttr,
// expiry_attr/expiryAttr, in_progress_expiry_attr/inProgressExpiryAttr,
// data_attr/dataAttr, validation_key_attr/validationKeyAttr).

// PowertoolsAttrs names the attributes of a Powertools record. An empty
// name is the default (DefaultPowertoolsAttrs).
type PowertoolsAttrs struct {
	Status           string // status: INPROGRESS, COMPLETED (EXPIRED internally)
	Expiry           string // the record's expiry, Unix seconds
	InProgressExpiry string // the in-progress deadline, Unix ms
	Data             string // the stored response (JSON text)
	Validation       string // the payload hash, when validation is on
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
	for _, p := range []struct{ v, def *string }{{&a.Status, &d.Status}, {&a.Expiry, &d.Expiry},
		{&a.InProgressExpiry, &d.InProgressExpiry}, {&a.Data, &d.Data}, {&a.Validation, &d.Validation}} {
		if *p.v == "" {
			*p.v = *p.def
		}
	}
	return a
}

// powertoolsRoles maps the names ParsePowertoolsAttrs accepts, lower-case
// with '-' and '_' dropped, to the field they set: the short names and
// Powertools' own option names in both languages.
var powertoolsRoles = map[string]string{
	"status": "status", "statusattr": "status",
	"expiry": "expiry", "expiration": "expiry", "expiryattr": "expiry",
	"inprogressexpiry": "in_progress_expiry", "inprogressexpiration": "in_progress_expiry", "inprogressexpiryattr": "in_progress_expiry",
	"data": "data", "dataattr": "data",
	"validation": "validation", "validationkey": "validation", "validationkeyattr": "validation", "validationattr": "validation",
}

// ParsePowertoolsAttrs reads --powertools-attrs: comma-separated
// ROLE=ATTRIBUTE pairs, where ROLE is status, expiry, in_progress_expiry,
// data or validation (Powertools' option names, e.g. statusAttr or
// in_progress_expiry_attr, work too) and ATTRIBUTE is the JSON attribute
// name the application configured. Roles not given keep their default; ""
// is all defaults. Unknown roles, empty names, a role given twice and two
// roles sharing one attribute are errors.
func ParsePowertoolsAttrs(s string) (PowertoolsAttrs, error) {
	var a PowertoolsAttrs
	if strings.TrimSpace(s) == "" {
		return a.withDefaults(), nil
	}
	set := map[string]*string{"status": &a.Status, "expiry": &a.Expiry, "in_progress_expiry": &a.InProgressExpiry,
		"data": &a.Data, "validation": &a.Validation}
	for _, item := range strings.Split(s, ",") {
		name, attr, ok := strings.Cut(item, "=")
		name, attr = strings.TrimSpace(name), strings.TrimSpace(attr)
		if !ok || name == "" {
			return PowertoolsAttrs{}, fmt.Errorf("%q: want ROLE=ATTRIBUTE, e.g. status=state", strings.TrimSpace(item))
		}
		role, known := powertoolsRoles[strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))]
		if !known {
			return PowertoolsAttrs{}, fmt.Errorf("unknown role %q: want status, expiry, in_progress_expiry, data or validation", name)
		}
		if attr == "" {
			return PowertoolsAttrs{}, fmt.Errorf("%s: empty attribute name", role)
		}
		if *set[role] != "" {
			return PowertoolsAttrs{}, fmt.Errorf("%s given twice", role)
		}
		*set[role] = attr
	}
	a = a.withDefaults()
	seen := map[string]string{}
	for _, p := range []struct{ role, attr string }{{"status", a.Status}, {"expiry", a.Expiry},
		{"in_progress_expiry", a.InProgressExpiry}, {"data", a.Data}, {"validation", a.Validation}} {
		if other, dup := seen[p.attr]; dup {
			return PowertoolsAttrs{}, fmt.Errorf("attribute %q names both %s and %s", p.attr, other, p.role)
		}
		seen[p.attr] = p.role
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

// decodePowertools reads an AWS Powertools idempotency record: expiry in
// seconds, in-progress expiry in ms. DecodeWith's judge turns a record past its
// expiry into EXPIRED.
func decodePowertools(r *Record, m map[string]string, a PowertoolsAttrs) {
	r.Format = FormatPowertools
	r.RawStatus = m[a.Status]
	r.Status = powertoolsStatus[r.RawStatus]
	r.ExpiresMs = secondsMs(m[a.Expiry])
	r.DeadlineMs = millis(m[a.InProgressExpiry])
	r.Fingerprint = m[a.Validation]
	if v, ok := m[a.Data]; ok && v != "null" {
		r.HasResult, r.ResultBytes = true, len(v)
	}
}

// DecodedFieldsWith is DecodedFields plus the custom Powertools attribute
// names of opts (its data attribute aside: a payload); with the default
// options it is DecodedFields. Powertools keeps its
// records in strings, which are read whole, so no hash decoder reads these
// names today; a reader that builds its partial hash reads from the same
// options as its DecodeWith calls stays right if one does.
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
