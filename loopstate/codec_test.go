package loopstate

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// specExample is the example of the format's section 3, verbatim.
const specExample = `{"schema": 1, "name": "ci-triage-main", "template": "ci-triage",
 "status": "halted", "created_at": "2025-05-01T09:00:00Z",
 "updated_at": "2025-05-02T14:30:05Z", "last_tick_at": "2025-05-02T14:30:04Z",
 "tick_count": 20, "resumed_count": 0, "consecutive_failures": 0, "failures_total": 2,
 "spent": {"usd": 1.84, "tokens": 412000, "seconds": 3110.5},
 "epoch": {"started_at": "2025-05-01T09:00:00Z", "tick": 0,
           "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}},
 "gates": {"max_ticks": 20, "max_consecutive_failures": 3,
           "budget": {"usd": 5.0, "tokens": null, "seconds": null}, "expires_at": null},
 "schedule": {"enabled": true, "every": "15m"},
 "current_tick": null, "pause": null,
 "halt": {"at": "2025-05-02T14:30:05Z", "gates": ["max_ticks"],
          "reason": "max_ticks: 20 ticks in window >= 20", "tick": 20},
 "last_approval": null}
`

// specCanonical is specExample in the canonical layout, with the gate keys
// the example leaves out written as null.
const specCanonical = `{
  "schema": 1,
  "name": "ci-triage-main",
  "template": "ci-triage",
  "status": "halted",
  "created_at": "2025-05-01T09:00:00Z",
  "updated_at": "2025-05-02T14:30:05Z",
  "last_tick_at": "2025-05-02T14:30:04Z",
  "tick_count": 20,
  "resumed_count": 0,
  "consecutive_failures": 0,
  "failures_total": 2,
  "spent": {"usd": 1.84, "tokens": 412000, "seconds": 3110.5},
  "epoch": {"started_at": "2025-05-01T09:00:00Z", "tick": 0, "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}},
  "gates": {"max_ticks": 20, "max_consecutive_failures": 3, "max_failures_total": null, "budget": {"usd": 5.0, "tokens": null, "seconds": null}, "expires_at": null, "checkpoint_every": null, "tick_timeout_s": null},
  "schedule": {"enabled": true, "every": "15m"},
  "current_tick": null,
  "pause": null,
  "halt": {"at": "2025-05-02T14:30:05Z", "gates": ["max_ticks"], "reason": "max_ticks: 20 ticks in window >= 20", "tick": 20},
  "last_approval": null
}
`

func TestSpecExampleRoundTrips(t *testing.T) {
	d, err := Codec{}.Decode([]byte(specExample))
	if err != nil {
		t.Fatalf("Decode(spec example) = %v", err)
	}
	out, err := Codec{}.Encode(d)
	if err != nil || string(out) != specExample {
		t.Fatalf("Encode(Decode(spec example)) = %q, %v, want the input", out, err)
	}
	d.UpdatedAt = d.UpdatedAt.Add(time.Second)
	d.UpdatedAt = d.UpdatedAt.Add(-time.Second)
	d.Gates.MaxFailuresTotal = nil
	c := d.Clone()
	c.extra = nil
	got := string(c.appendCanonical(nil))
	if got != specCanonical {
		t.Fatalf("canonical(spec example) =\n%s\nwant\n%s", got, specCanonical)
	}
	if d2, err := (Codec{}).Decode([]byte(got)); err != nil {
		t.Fatalf("Decode(canonical) = %v", err)
	} else if out, _ := (Codec{}).Encode(d2); string(out) != got {
		t.Fatalf("canonical does not round-trip")
	}
	if trips := d.TrippedGates(d.UpdatedAt); len(trips) != 1 || trips[0].Reason != "max_ticks: 20 ticks in window >= 20" {
		t.Fatalf("TrippedGates = %v", trips)
	}
	_ = errors.Is
	_ = strings.Contains
}
