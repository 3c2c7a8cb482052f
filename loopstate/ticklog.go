package loopstate

import (
	"bytes"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
)

// Trigger says what started a tick.
type Trigger string

// The triggers of a tick.
const (
	// TriggerSchedule is an automatic trigger (cron, a systemd timer): it runs only
	// when schedule.enabled is true, and never waits for a busy lock: it then
	// logs a skipped/busy line (one O_APPEND write, without the lock) and
	// returns it with a nil error.
	TriggerSchedule Trigger = "schedule"
	// TriggerManual is a person's trigger: it ignores schedule.enabled and waits
	// for the lock as long as its context allows, and no longer than
	// WithLockTimeout if given, then returns the *lock.BusyError that names
	// the holder, having run and recorded nothing.
	TriggerManual Trigger = "manual"
)

// Outcome is how a tick ended.
type Outcome string

// The outcomes of a tick, as the tick log spells them.
const (
	OK        Outcome = "ok"        // the harness succeeded
	Fail      Outcome = "fail"      // the harness failed, or could not be run
	Timeout   Outcome = "timeout"   // the harness ran past gates.tick_timeout_s and was killed
	Skipped   Outcome = "skipped"   // no harness ran; TickRecord.SkipReason says why
	Abandoned Outcome = "abandoned" // the runner died mid-tick; logged by the next tick
)

// The reasons for a skipped tick, as TickRecord.SkipReason spells them.
const (
	skipPaused           = "paused"            // the loop is paused
	skipHalted           = "halted"            // the loop is halted
	skipBusy             = "busy"              // a scheduled tick found the lock held
	skipScheduleDisabled = "schedule_disabled" // a scheduled tick, with the schedule off
	skipGate             = "gate"              // a gate tripped before the harness ran, halting the loop
)

// maxNote is the longest note, in bytes, that a tick record keeps; a longer
// one is cut at a character boundary.
const maxNote = 500

// TickRecord is one line of the tick log, ticks.jsonl. Every tick writes
// exactly one: when it ends, when it is skipped, or (as abandoned) when the
// next tick finds that its runner died. A tick that halted the loop (a gate
// before or after its harness, or the harness itself through check-gate)
// has StatusAfter Halted and StatusBefore not, and GatesTripped lists the
// gates that tripped (empty when the harness halted it); a tick skipped
// because the loop was halted already has SkipReason "halted".
type TickRecord struct {
	N            int64     // "n": tick_count after this tick; a skipped tick repeats the last n
	StartedAt    time.Time // "started_at"
	EndedAt      time.Time // "ended_at"
	Outcome      Outcome   // "outcome"
	SkipReason   string    // "skip_reason": "paused", "halted", "busy", "schedule_disabled" or "gate"; "" unless skipped
	StatusBefore Status    // "status_before"
	StatusAfter  Status    // "status_after"
	ExitCode     *int      // "exit_code": the harness's exit code, nil when it has none
	Cost         Cost      // "cost": this tick's cost
	GatesTripped []string  // "gates_tripped": gates that tripped (and halted the loop)
	Trigger      Trigger   // "trigger"
	PID          int       // "pid": the runner's process id
	Note         string    // "note": a short summary, at most 500 bytes
}

// wireRecord is a tick-log line, its keys in the format's order.
type wireRecord struct {
	N            count     `json:"n"`
	StartedAt    timestamp `json:"started_at"`
	EndedAt      timestamp `json:"ended_at"`
	Outcome      str       `json:"outcome"`
	SkipReason   *nonEmpty `json:"skip_reason"`
	StatusBefore str       `json:"status_before"`
	StatusAfter  str       `json:"status_after"`
	ExitCode     *int      `json:"exit_code"`
	Cost         wireCost  `json:"cost"`
	GatesTripped []str     `json:"gates_tripped"`
	Trigger      str       `json:"trigger"`
	PID          count     `json:"pid"`
	Note         str       `json:"note"`
}

// appendRecord appends r as one JSON line, keys in the format's order.
func appendRecord(b []byte, r *TickRecord) []byte {
	w := wireRecord{
		N: count(r.N), StartedAt: timestamp(r.StartedAt), EndedAt: timestamp(r.EndedAt), Outcome: str(r.Outcome),
		SkipReason: optNonEmpty(r.SkipReason), StatusBefore: str(r.StatusBefore), StatusAfter: str(r.StatusAfter),
		ExitCode: r.ExitCode, Cost: wireCostOf(r.Cost), GatesTripped: make([]str, len(r.GatesTripped)),
		Trigger: str(r.Trigger), PID: count(r.PID), Note: str(truncNote(r.Note)),
	}
	for i, g := range r.GatesTripped {
		w.GatesTripped[i] = str(g)
	}
	return append(appendLine(b, w), '\n')
}

// MarshalJSON encodes r as its line in the tick log, without the newline:
// the same keys, in the same order, with the same timestamp layout.
func (r TickRecord) MarshalJSON() ([]byte, error) {
	b := appendRecord(nil, &r)
	return b[:len(b)-1], nil
}

// truncNote cuts s to at most maxNote bytes at a character boundary. A byte
// that is not UTF-8 is first replaced by U+FFFD, as the encoder would write
// it, so that the note read back from the log is what is cut here and still
// within maxNote bytes (not three times as long).
func truncNote(s string) string {
	if !utf8.ValidString(s) {
		var b strings.Builder
		for i := 0; i < len(s) && b.Len() <= maxNote; {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
		}
		s = b.String()
	}
	if len(s) <= maxNote {
		return s
	}
	n := maxNote
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// parseRecord reads one tick-log line. It is lenient about what it does not
// need (unknown keys are ignored) and strict about what it reads.
func parseRecord(line []byte) (TickRecord, error) {
	var w wireRecord
	if err := checkJSON("tick", line); err != nil {
		return TickRecord{}, err
	}
	kvs, err := objectKeys("tick", line)
	if err != nil {
		return TickRecord{}, err
	}
	var ignored []kv
	if err := checkObject("tick", kvs, reflect.TypeFor[wireRecord](), &ignored); err != nil {
		return TickRecord{}, err
	}
	if err := unmarshal(line, &w); err != nil {
		return TickRecord{}, err
	}
	t := TickRecord{
		N: int64(w.N), StartedAt: time.Time(w.StartedAt), EndedAt: time.Time(w.EndedAt), Outcome: Outcome(w.Outcome),
		SkipReason: optString(w.SkipReason), StatusBefore: Status(w.StatusBefore), StatusAfter: Status(w.StatusAfter),
		ExitCode: w.ExitCode, Cost: w.Cost.cost(), GatesTripped: make([]string, len(w.GatesTripped)),
		Trigger: Trigger(w.Trigger), PID: int(w.PID), Note: string(w.Note),
	}
	for i, g := range w.GatesTripped {
		t.GatesTripped[i] = string(g)
	}
	return t, nil
}

// parseLog reads a tick log, skipping lines that do not parse (a crash can
// leave a partial last line).
func parseLog(data []byte) []TickRecord {
	var recs []TickRecord
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if r, err := parseRecord(line); err == nil {
			recs = append(recs, r)
		}
	}
	return recs
}
