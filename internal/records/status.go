package records

import (
	"slices"
	"strings"
)

// statusWords maps the status names applications use (upper case, spaces
// and hyphens as underscores) to the normalised ones. A record that says
// LOCKED is being worked on; the LOCKED status is a lock key's (locks.go).
var statusWords = map[string]Status{
	"PROCESSING": Processing, "STARTED": Processing, "INPROGRESS": Processing,
	"IN_PROGRESS": Processing, "RUNNING": Processing, "PENDING": Processing,
	"LOCKED": Processing, "CLAIMED": Processing, "ACQUIRED": Processing,
	"COMPLETED": Completed, "COMPLETE": Completed, "DONE": Completed,
	"SUCCESS": Completed, "SUCCEEDED": Completed, "SUCCESSFUL": Completed,
	"FINISHED": Completed, "PROCESSED": Completed,
	"FAILED": Failed, "FAIL": Failed, "ERROR": Failed, "ERRORED": Failed, "FAILURE": Failed,
	"EXPIRED": Expired,
}

// NormaliseStatus maps a status as an application wrote it to a Status;
// UNKNOWN when it is not a known word.
func NormaliseStatus(raw string) Status {
	if s, ok := statusWords[statusKey(raw)]; ok {
		return s
	}
	return Unknown
}

func statusKey(raw string) string {
	raw = strings.TrimSpace(raw)
	if len(raw) > 32 {
		return ""
	}
	return statusSeparators.Replace(strings.ToUpper(raw))
}

var statusSeparators = strings.NewReplacer(" ", "_", "-", "_")

// Statuses lists every status in the order summaries show them.
func Statuses() []Status {
	return []Status{Processing, Locked, Completed, Failed, Expired, Unknown, Absent}
}

// ParseStatus reads a user's --status value: a normalised name or any word
// NormaliseStatus knows, in any case. ok is false for anything else.
func ParseStatus(s string) (Status, bool) {
	if st := Status(strings.ToUpper(strings.TrimSpace(s))); slices.Contains(Statuses(), st) {
		return st, true
	}
	st := NormaliseStatus(s)
	return st, st != Unknown
}

// Selectable are the statuses --status selects by: all but ABSENT.
func Selectable() []Status {
	return []Status{Processing, Locked, Completed, Failed, Expired, Unknown}
}

// Synonyms are the other words ParseStatus reads as st ("DONE" is
// COMPLETED), sorted; LOCKED names lock keys, not records saying LOCKED.
func Synonyms(st Status) []string {
	var out []string
	for w, s := range statusWords {
		if s == st && w != string(st) && Status(w) != Locked {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}
