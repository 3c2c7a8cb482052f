package loopstate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The gate keys, as halt.gates and the tick log list them.
const (
	GateMaxTicks               = "max_ticks"
	GateMaxConsecutiveFailures = "max_consecutive_failures"
	GateMaxFailuresTotal       = "max_failures_total"
	GateBudgetUSD              = "budget.usd"
	GateBudgetTokens           = "budget.tokens"
	GateBudgetSeconds          = "budget.seconds"
	GateExpiresAt              = "expires_at"
	GateCheckpointEvery        = "checkpoint_every"
)

// gateOrder is the fixed order in which gates are evaluated and listed.
var gateOrder = []string{
	GateMaxTicks, GateMaxConsecutiveFailures, GateMaxFailuresTotal,
	GateBudgetUSD, GateBudgetTokens, GateBudgetSeconds,
	GateExpiresAt, GateCheckpointEvery,
}

// A trip is a gate that tripped and why.
type trip struct {
	gate   string // one of the Gate* keys
	reason string // for example "max_ticks: 20 ticks in window >= 20"
}

// trippedGates evaluates every gate on d at now and returns those that trip,
// in the fixed order of the Gate* keys. It is a pure function of d and now,
// whatever d's status; it changes nothing. Tick-count and budget gates
// measure inside the window (the current value minus epoch's); a nil
// threshold never trips.
func (d *Doc) trippedGates(now time.Time) []trip {
	g := d.Gates
	var trips []trip
	trip := func(gate, format string, args ...any) {
		trips = append(trips, trip{gate: gate, reason: gate + ": " + fmt.Sprintf(format, args...)})
	}
	window := d.TickCount - d.Epoch.Tick
	if g.MaxTicks != nil && window >= *g.MaxTicks {
		trip(GateMaxTicks, "%d ticks in window >= %d", window, *g.MaxTicks)
	}
	if g.MaxConsecutiveFailures != nil && d.ConsecutiveFailures >= *g.MaxConsecutiveFailures {
		trip(GateMaxConsecutiveFailures, "%d consecutive failures >= %d", d.ConsecutiveFailures, *g.MaxConsecutiveFailures)
	}
	if g.MaxFailuresTotal != nil && d.FailuresTotal >= *g.MaxFailuresTotal {
		trip(GateMaxFailuresTotal, "%d failures in total >= %d", d.FailuresTotal, *g.MaxFailuresTotal)
	}
	if b := g.Budget.USD; b != nil {
		if spent := d.Spent.USD - d.Epoch.Spent.USD; spent >= *b {
			trip(GateBudgetUSD, "%s spent in window >= %s", num(spent), num(*b))
		}
	}
	if b := g.Budget.Tokens; b != nil {
		if spent := d.Spent.Tokens - d.Epoch.Spent.Tokens; spent >= *b {
			trip(GateBudgetTokens, "%d tokens in window >= %d", spent, *b)
		}
	}
	if b := g.Budget.Seconds; b != nil {
		if spent := d.Spent.Seconds - d.Epoch.Spent.Seconds; spent >= *b {
			trip(GateBudgetSeconds, "%ss in window >= %ss", num(spent), num(*b))
		}
	}
	if g.ExpiresAt != nil && !stamp(now).Before(*g.ExpiresAt) {
		trip(GateExpiresAt, "now %s >= %s", stamp(now).Format(timeLayout), g.ExpiresAt.Format(timeLayout))
	}
	if g.CheckpointEvery != nil && window > 0 && window%*g.CheckpointEvery == 0 {
		trip(GateCheckpointEvery, "%d ticks in window, a multiple of %d", window, *g.CheckpointEvery)
	}
	return trips
}

// num formats a float for a gate reason: shortest digits, rounded to
// nanodollars so that float noise (0.30000000000000004) does not show.
func num(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// halt moves d to halted because of trips.
func (d *Doc) halt(now time.Time, trips []trip) {
	gates := make([]string, len(trips))
	reasons := make([]string, len(trips))
	for i, t := range trips {
		gates[i], reasons[i] = t.gate, t.reason
	}
	d.Status = Halted
	d.Halted = &Halt{At: now, Gates: gates, Reason: strings.Join(reasons, "; "), Tick: d.TickCount}
	d.UpdatedAt = now
}
