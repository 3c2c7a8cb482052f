package loopstate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The gate keys, as halt.gates and the tick log list them.
const (
	gateMaxTicks               = "max_ticks"
	gateMaxConsecutiveFailures = "max_consecutive_failures"
	gateMaxFailuresTotal       = "max_failures_total"
	gateBudgetUSD              = "budget.usd"
	gateBudgetTokens           = "budget.tokens"
	gateBudgetSeconds          = "budget.seconds"
	gateExpiresAt              = "expires_at"
	gateCheckpointEvery        = "checkpoint_every"
)

// gateOrder is the fixed order in which gates are evaluated and listed.
var gateOrder = []string{
	gateMaxTicks, gateMaxConsecutiveFailures, gateMaxFailuresTotal,
	gateBudgetUSD, gateBudgetTokens, gateBudgetSeconds,
	gateExpiresAt, gateCheckpointEvery,
}

// A trip is a gate that tripped and why.
type trip struct {
	gate   string // one of the gate keys above
	reason string // for example "max_ticks: 20 ticks in window >= 20"
}

// trippedGates evaluates every gate on d at now and returns those that trip,
// in the fixed order of gateOrder. It is a pure function of d and now,
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
		trip(gateMaxTicks, "%d ticks in window >= %d", window, *g.MaxTicks)
	}
	if g.MaxConsecutiveFailures != nil && d.ConsecutiveFailures >= *g.MaxConsecutiveFailures {
		trip(gateMaxConsecutiveFailures, "%d consecutive failures >= %d", d.ConsecutiveFailures, *g.MaxConsecutiveFailures)
	}
	if g.MaxFailuresTotal != nil && d.FailuresTotal >= *g.MaxFailuresTotal {
		trip(gateMaxFailuresTotal, "%d failures in total >= %d", d.FailuresTotal, *g.MaxFailuresTotal)
	}
	if b := g.BudgetUSD; b != nil {
		if spent := d.Spent.USD - d.Epoch.Spent.USD; spent >= *b {
			trip(gateBudgetUSD, "%s spent in window >= %s", num(spent), num(*b))
		}
	}
	if b := g.BudgetTokens; b != nil {
		if spent := d.Spent.Tokens - d.Epoch.Spent.Tokens; spent >= *b {
			trip(gateBudgetTokens, "%d tokens in window >= %d", spent, *b)
		}
	}
	if b := g.BudgetSeconds; b != nil {
		if spent := d.Spent.Seconds - d.Epoch.Spent.Seconds; spent >= *b {
			trip(gateBudgetSeconds, "%ss in window >= %ss", num(spent), num(*b))
		}
	}
	if g.ExpiresAt != nil && !stamp(now).Before(*g.ExpiresAt) {
		trip(gateExpiresAt, "now %s >= %s", stamp(now).Format(timeLayout), g.ExpiresAt.Format(timeLayout))
	}
	if g.CheckpointEvery != nil && window > 0 && window%*g.CheckpointEvery == 0 {
		trip(gateCheckpointEvery, "%d ticks in window, a multiple of %d", window, *g.CheckpointEvery)
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
	d.Halted = &Event{At: now, Gates: gates, Reason: strings.Join(reasons, "; "), Tick: d.TickCount}
	d.UpdatedAt = now
}
