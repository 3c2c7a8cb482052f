package loopstate

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"
)

// Trigger says what started a tick.
type Trigger string

// The triggers of a tick.
const (
	// TriggerSchedule is an automatic trigger (cron, a systemd timer): it runs only
	// when schedule.enabled is true, and never waits for a busy lock.
	TriggerSchedule Trigger = "schedule"
	// TriggerManual is a person's trigger: it ignores schedule.enabled and waits
	// for the lock as long as its context allows.
	TriggerManual Trigger = "manual"
)

// Outcome is how a tick ended.
type Outcome string

// The outcomes of a tick, as the tick log spells them.
const (
	OK        Outcome = "ok"        // the harness succeeded
	Fail      Outcome = "fail"      // the harness failed, or could not be run
	Timeout   Outcome = "timeout"   // the harness ran past gates.tick_timeout_s and was killed
	Skipped   Outcome = "skipped"   // no harness ran; see SkipReason
	Abandoned Outcome = "abandoned" // the runner died mid-tick; logged by the next tick
)

// SkipReason says why a tick was skipped.
type SkipReason string

// The reasons for a skipped tick.
const (
	SkipPaused           SkipReason = "paused"
	SkipHalted           SkipReason = "halted"
	SkipBusy             SkipReason = "busy"
	SkipScheduleDisabled SkipReason = "schedule_disabled"
	SkipGate             SkipReason = "gate"
)

// MaxNote is the longest note, in bytes, that a tick record keeps; a longer
// one is cut at a character boundary.
const MaxNote = 500

// TickRecord is one line of the tick log, ticks.jsonl. Every tick writes
// exactly one: when it ends, when it is skipped, or (as abandoned) when the
// next tick finds that its runner died.
type TickRecord struct {
	N            int64      // "n": tick_count after this tick; a skipped tick repeats the last n
	StartedAt    time.Time  // "started_at"
	EndedAt      time.Time  // "ended_at"
	Outcome      Outcome    // "outcome"
	SkipReason   SkipReason // "skip_reason"; "" is null
	StatusBefore Status     // "status_before"
	StatusAfter  Status     // "status_after"
	ExitCode     *int       // "exit_code": the harness's exit code, nil when it has none
	Cost         Cost       // "cost": this tick's cost
	GatesTripped []string   // "gates_tripped": gates that tripped (and halted the loop)
	Trigger      Trigger    // "trigger"
	PID          int        // "pid": the runner's process id
	Note         string     // "note": a short summary, at most MaxNote bytes
}

// appendRecord appends r as one JSON line, keys in the format's order.
func appendRecord(b []byte, r *TickRecord) []byte {
	w := objWriter{b: b}
	w.key("n").b = strconv.AppendInt(w.b, r.N, 10)
	w.key("started_at").b = appendTime(w.b, r.StartedAt)
	w.key("ended_at").b = appendTime(w.b, r.EndedAt)
	w.key("outcome").b = appendString(w.b, string(r.Outcome))
	w.key("skip_reason").b = appendOptString(w.b, string(r.SkipReason))
	w.key("status_before").b = appendString(w.b, string(r.StatusBefore))
	w.key("status_after").b = appendString(w.b, string(r.StatusAfter))
	if r.ExitCode == nil {
		w.key("exit_code").b = append(w.b, "null"...)
	} else {
		w.key("exit_code").b = strconv.AppendInt(w.b, int64(*r.ExitCode), 10)
	}
	w.key("cost").b = appendCost(w.b, r.Cost)
	gates := r.GatesTripped
	if gates == nil {
		gates = []string{}
	}
	w.key("gates_tripped").b = appendStrings(w.b, gates)
	w.key("trigger").b = appendString(w.b, string(r.Trigger))
	w.key("pid").b = strconv.AppendInt(w.b, int64(r.PID), 10)
	w.key("note").b = appendString(w.b, truncNote(r.Note))
	return append(w.end(), '\n')
}

// truncNote cuts s to at most MaxNote bytes at a character boundary.
func truncNote(s string) string {
	if len(s) <= MaxNote {
		return s
	}
	n := MaxNote
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// parseRecord reads one tick-log line. It is lenient about what it does not
// need (unknown keys are ignored) and strict about what it reads.
func parseRecord(line []byte) (TickRecord, error) {
	if err := checkJSON("tick", line); err != nil {
		return TickRecord{}, err
	}
	o, err := readObj("tick", line)
	if err != nil {
		return TickRecord{}, err
	}
	r := reader{o: o}
	var t TickRecord
	t.N = r.int("n")
	t.StartedAt = r.time("started_at", false)
	t.EndedAt = r.time("ended_at", false)
	t.Outcome = Outcome(r.str("outcome", false))
	t.SkipReason = SkipReason(r.str("skip_reason", true))
	t.StatusBefore = Status(r.str("status_before", false))
	t.StatusAfter = Status(r.str("status_after", false))
	if v, err := o.get("exit_code"); err != nil {
		r.take(err)
	} else if !isNull(v) {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			r.take(malformed("tick.exit_code", "want an integer or null, got %.40s", v))
		}
		t.ExitCode = &n
	}
	t.Cost = r.cost("cost")
	t.GatesTripped = r.strs("gates_tripped")
	t.Trigger = Trigger(r.str("trigger", false))
	t.PID = int(r.int("pid"))
	t.Note = r.str("note", false)
	return t, r.err
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
