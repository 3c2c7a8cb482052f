package loopstate

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzTickLog: a tick log of any bytes (a line torn by a crash, another
// program's output, garbage) is read without a panic, line by line; every
// record read writes back as a line that reads back to the same record, and
// writing it again gives the same bytes.
func FuzzTickLog(f *testing.F) {
	f.Add([]byte(`{"n": 1, "started_at": "2026-12-01T08:41:33Z", "ended_at": "2026-12-01T08:41:33Z", "outcome": "ok", "skip_reason": null, "status_before": "running", "status_after": "running", "exit_code": 0, "cost": {"usd": 0.0, "tokens": 0, "seconds": 0.001}, "gates_tripped": [], "trigger": "manual", "pid": 5089, "note": ""}` + "\n"))
	f.Add([]byte(`{"n": 2, "started_at": "2026-12-01T08:41:33Z", "ended_at": "2026-12-01T08:41:34Z", "outcome": "skipped", "skip_reason": "gate", "status_before": "running", "status_after": "halted", "exit_code": null, "cost": {"usd": 1e300, "tokens": 9223372036854775807, "seconds": 0}, "gates_tripped": ["max_ticks", "budget.usd"], "trigger": "schedule", "pid": 1, "note": "\u00e9\n\"q\""}` + "\n" + `{"n": 3, "started_at": "2026-12-01T08:4`))
	f.Add([]byte("\n\n{}\n{\"n\": -1}\r\n\xff\x00\n"))
	f.Add([]byte(`{"n": 1, "n": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := parseLog(data)
		for _, line := range bytes.Split(data, []byte("\n")) {
			r1, err := parseRecord(line)
			if err != nil {
				continue
			}
			out1 := appendRecord(nil, &r1)
			r2, err := parseRecord(bytes.TrimSuffix(out1, []byte("\n")))
			if err != nil {
				t.Fatalf("parseRecord(appendRecord(parseRecord(%q))) = %v; the line written was %q", line, err, out1)
			}
			out2 := appendRecord(nil, &r2)
			r3, err := parseRecord(bytes.TrimSuffix(out2, []byte("\n")))
			if err != nil || !reflect.DeepEqual(r2, r3) || !bytes.Equal(out2, appendRecord(nil, &r3)) {
				t.Fatalf("a record read from %q does not survive being written twice:\n%q\n%q (%v)", line, out1, out2, err)
			}
		}
		_ = recs
	})
}
