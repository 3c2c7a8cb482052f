package loopstate

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/filetxn/filetxn"
)

// schemaVersion is the schema major this package reads and writes. A state
// file with another major is refused with a *filetxn.FormatError.
const schemaVersion = 1

// Status is a loop's lifecycle state.
type Status string

// The three statuses of a loop.
const (
	Running Status = "running"
	Paused  Status = "paused"
	Halted  Status = "halted"
)

// Cost is what ticks cost: money, tokens and wall time. Every field is
// non-negative.
type Cost struct {
	USD     float64 // "usd"
	Tokens  int64   // "tokens"
	Seconds float64 // "seconds"
}

// add returns c plus o.
func (c Cost) add(o Cost) Cost {
	return Cost{USD: c.USD + o.USD, Tokens: c.Tokens + o.Tokens, Seconds: c.Seconds + o.Seconds}
}

// Epoch is the gate window: the values of tick_count and spent when it
// opened (at create, or at the last approve). Budget and tick-count gates
// measure from it.
type Epoch struct {
	StartedAt time.Time // "started_at"
	Tick      int64     // "tick": tick_count when the window opened
	Spent     Cost      // "spent": spent when the window opened
}

// Gates holds the thresholds of the gates and the per-tick wall timeout. A
// nil threshold disables that gate; a threshold is set with new, as in
//
//	loopstate.Gates{MaxTicks: new(int64(20)), BudgetUSD: new(5.0)}
//
// Tick-count and budget gates measure inside the window (see [Epoch]). A
// zero threshold is allowed: it trips at once, halting the loop for good.
// Create and a write of the state refuse invalid thresholds (negative or
// non-finite, a CheckpointEvery below 1, a TickTimeout that is not
// positive, an ExpiresAt that is not whole seconds or not in the years
// 0000 to 9999 in UTC, which RFC 3339 cannot write). halt.gates and the
// tick log name a gate by its key: "max_ticks", "max_consecutive_failures",
// "max_failures_total", "budget.usd", "budget.tokens", "budget.seconds",
// "expires_at", "checkpoint_every".
type Gates struct {
	MaxTicks               *int64     // "max_ticks": ticks in the window
	MaxConsecutiveFailures *int64     // "max_consecutive_failures"
	MaxFailuresTotal       *int64     // "max_failures_total": lifetime failures
	BudgetUSD              *float64   // "budget.usd": money spent in the window
	BudgetTokens           *int64     // "budget.tokens": tokens spent in the window
	BudgetSeconds          *float64   // "budget.seconds": harness seconds spent in the window
	ExpiresAt              *time.Time // "expires_at": absolute deadline
	CheckpointEvery        *int64     // "checkpoint_every": a forced review every N ticks of the window; at least 1
	TickTimeout            *float64   // "tick_timeout_s": the harness's wall timeout in seconds, > 0; nil means 30 minutes
}

// defaultTickTimeout is the harness's wall timeout when gates.tick_timeout_s
// is null.
const defaultTickTimeout = 30 * time.Minute

// timeout returns the harness's wall timeout: TickTimeout, or 30 minutes
// when it is nil.
func (g Gates) timeout() time.Duration {
	if g.TickTimeout == nil {
		return defaultTickTimeout
	}
	return time.Duration(*g.TickTimeout * float64(time.Second))
}

// Schedule is the automatic trigger's switch. Enabled is the only switch the
// store honours; Every ("15m", "1h") is written into the external timer and
// means nothing inside the store.
type Schedule struct {
	Enabled bool   // "enabled"
	Every   string // "every"; "" is null
}

// currentTick ("current_tick") marks a tick in progress: Tick's own
// bookkeeping, which a Doc keeps without showing it. Left set by a runner
// that died, it is how the next tick knows to log the tick as abandoned. A
// live process with PID that is the same process (the same start time,
// where the OS tells it) is still running the tick.
type currentTick struct {
	N         int64     // "n": tick_count + 1
	StartedAt time.Time // "started_at"
	PID       int       // "pid": the runner's process id

	// pidStart is an opaque token for the moment the runner's process
	// started, as the OS reports it ("pid_start"; "" is null, and is what
	// files written before the key existed give): equal tokens for one pid
	// mean one process.
	pidStart string
}

// An Event records a change of status: when, who, why, at which tick. A
// Doc holds three: the pause of a paused loop (Doc.Paused, the file's
// "pause"), the halt of a halted one (Doc.Halted, "halt") and the last
// approve (Doc.LastApproval, "last_approval"). Each key holds some of the
// fields, under these names:
//
//	field    pause     halt      last_approval
//	At       "at"      "at"      "at"
//	By       "by"      -         "by"
//	Reason   "reason"  "reason"  "note"
//	Tick     -         "tick"    "tick"
//	Gates    -         "gates"   -
//
// A write refuses an Event that sets a field its key does not hold, with a
// *filetxn.FormatError naming it ("pause.tick"), so that nothing set is
// lost.
type Event struct {
	At     time.Time // when it happened
	By     string    // who made it: the operator of a pause or an approve
	Reason string    // why: a pause's reason, a halt's gate reasons joined by "; ", an approve's note
	Tick   int64     // tick_count when it happened (halt, last_approval)
	Gates  []string  // a halt's tripped gates, in the fixed order of the gates (see [Gates])
}

// Doc is the state of one loop: the contents of its state file. Get one from
// [Loop.View], or change one in [Loop.Mutate] or [Root.Create]. Its fields
// may be read and set freely there; a write refuses a Doc that breaks an
// invariant of the format (status "paused" exactly when Paused is set,
// "halted" exactly when Halted is set, valid gates, non-negative counters,
// ...) with a *filetxn.FormatError naming the key, and writes nothing.
// Times are UTC with second precision; a zero time is null in the file. A
// Doc keeps the bytes it was decoded from: unchanged, it encodes to exactly
// those bytes, and unknown top-level keys survive a change. The zero Doc is
// not valid.
//
// The file's current_tick, which marks a tick in progress, is Tick's own
// bookkeeping: a Doc keeps it without a field for it, so that no Mutate
// changes it, and MarshalJSON shows it. While it is set, a change of TickCount is
// refused (current_tick.n must stay tick_count+1).
type Doc struct {
	Name                string    // "name": the directory name
	Template            string    // "template": what the loop was created from; "" is null
	Status              Status    // "status"
	CreatedAt           time.Time // "created_at"
	UpdatedAt           time.Time // "updated_at": set by every write
	LastTickAt          time.Time // "last_tick_at": end of the last completed tick; zero is null
	TickCount           int64     // "tick_count": completed ticks (ok, failed, timed out, abandoned)
	ResumedCount        int64     // "resumed_count": approvals
	ConsecutiveFailures int64     // "consecutive_failures"
	FailuresTotal       int64     // "failures_total"
	Spent               Cost      // "spent": lifetime totals
	Epoch               Epoch     // "epoch": the gate window
	Gates               Gates     // "gates"
	Schedule            Schedule  // "schedule"
	Paused              *Event    // "pause": set exactly while paused
	Halted              *Event    // "halt": set exactly while halted
	LastApproval        *Event    // "last_approval": the last approve

	current *currentTick // "current_tick": set while a tick runs
	schema  int          // "schema": schemaVersion
	extra   []kv         // unknown top-level keys, in file order, their values compacted
	raw     []byte       // the bytes this Doc was decoded from
	read    *Doc         // a deep copy of the Doc as decoded, to tell whether it changed
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// validName reports whether name may name a loop: it matches
// ^[a-z0-9][a-z0-9-]{0,62}$, which rules out path separators, "." and "..",
// and names Windows reserves only by case-sensitive accident.
func validName(name string) bool { return nameRE.MatchString(name) }

// checkName refuses, for the operation op, a name that may not name a loop,
// with an error matching filetxn.ErrInvalidArgument.
func checkName(op, name string) error {
	if !validName(name) {
		return fmt.Errorf("loopstate: %s: invalid loop name %q: it does not match %s: %w", op, name, nameRE, filetxn.ErrInvalidArgument)
	}
	return nil
}

// newDoc returns the initial state of a loop named name, created at now:
// running, counters at zero, no gates, the gate window opened at now.
func newDoc(name string, now time.Time) *Doc {
	now = stamp(now)
	return &Doc{
		schema:    schemaVersion,
		Name:      name,
		Status:    Running,
		CreatedAt: now,
		UpdatedAt: now,
		Epoch:     Epoch{StartedAt: now},
	}
}

// maxString bounds the free-text fields a transition accepts (by, reason,
// note, template, every), so that a state file stays small.
const maxString = 4096

// stamp normalizes a time to what the file holds: UTC, whole seconds.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// validate checks the thresholds: counts non-negative (checkpoint_every at
// least 1), money, tokens and seconds finite and non-negative, tick_timeout_s
// positive. It returns a *filetxn.FormatError whose Key is the gate's key
// ("gates.max_ticks"); Create turns it into an invalid argument.
func (g Gates) validate() error {
	bad := func(key, why string) error { return &filetxn.FormatError{Key: "gates." + key, Err: errors.New(why)} }
	for _, c := range []struct {
		key string
		v   *int64
		min int64
	}{
		{"max_ticks", g.MaxTicks, 0},
		{"max_consecutive_failures", g.MaxConsecutiveFailures, 0},
		{"max_failures_total", g.MaxFailuresTotal, 0},
		{"budget.tokens", g.BudgetTokens, 0},
		{"checkpoint_every", g.CheckpointEvery, 1},
	} {
		if c.v != nil && *c.v < c.min {
			return bad(c.key, fmt.Sprintf("is %d, want at least %d", *c.v, c.min))
		}
	}
	for _, c := range []struct {
		key string
		v   *float64
	}{{"budget.usd", g.BudgetUSD}, {"budget.seconds", g.BudgetSeconds}, {"tick_timeout_s", g.TickTimeout}} {
		if c.v != nil && (math.IsNaN(*c.v) || math.IsInf(*c.v, 0) || *c.v < 0) {
			return bad(c.key, fmt.Sprintf("is %v, want a finite number >= 0", *c.v))
		}
	}
	if g.TickTimeout != nil && (*g.TickTimeout == 0 || g.timeout() <= 0) {
		return bad("tick_timeout_s", "must be positive")
	}
	if g.ExpiresAt != nil {
		if !g.ExpiresAt.Equal(stamp(*g.ExpiresAt)) {
			return bad("expires_at", "must be whole seconds")
		}
		// RFC 3339 has four digits for the year: a later or earlier time
		// would be written as a timestamp no reader takes.
		if y := g.ExpiresAt.UTC().Year(); y < 0 || y > 9999 {
			return bad("expires_at", fmt.Sprintf("is in the year %d (UTC), want one from 0000 to 9999", y))
		}
	}
	return nil
}

// clone returns g with its own copies of the thresholds, so that a Doc never
// shares them with the caller.
func (g Gates) clone() Gates {
	c := g
	c.MaxTicks = clonePtr(g.MaxTicks)
	c.MaxConsecutiveFailures = clonePtr(g.MaxConsecutiveFailures)
	c.MaxFailuresTotal = clonePtr(g.MaxFailuresTotal)
	c.BudgetUSD = clonePtr(g.BudgetUSD)
	c.BudgetTokens = clonePtr(g.BudgetTokens)
	c.BudgetSeconds = clonePtr(g.BudgetSeconds)
	c.CheckpointEvery = clonePtr(g.CheckpointEvery)
	c.TickTimeout = clonePtr(g.TickTimeout)
	if g.ExpiresAt != nil {
		t := stamp(*g.ExpiresAt)
		c.ExpiresAt = &t
	}
	return c
}

// clone returns a deep copy of e (nil for nil).
func (e *Event) clone() *Event {
	if e == nil {
		return nil
	}
	c := *e
	c.Gates = slices.Clone(e.Gates)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// canonical returns d in the canonical layout of the format, as a changed
// Doc is written, whether or not it keeps the invariants.
func (d *Doc) canonical() string { return string(d.appendCanonical(nil)) }

// clone returns a deep copy of d, without what it was decoded from.
func (d *Doc) clone() *Doc {
	c := *d
	c.raw, c.read = nil, nil
	c.Gates = d.Gates.clone()
	c.current = clonePtr(d.current)
	c.Paused, c.Halted, c.LastApproval = d.Paused.clone(), d.Halted.clone(), d.LastApproval.clone()
	c.extra = slices.Clone(d.extra)
	return &c
}

// The invariants of the format, as a broken one is named.
const (
	invPaused      = `status=="paused" <=> pause is set`
	invHalted      = `status=="halted" <=> halt is set`
	invCurrentTick = `current_tick is set only while a tick is in progress (current_tick.n == tick_count+1)`
	invEpochTick   = `epoch.tick <= tick_count`
	invEpochSpent  = `epoch.spent <= spent`
	invName        = `name is a valid loop name (and the directory's)`
	invStatus      = `status is "running", "paused" or "halted"`
)

// validate checks d against the format: the invariants of the format (paused
// exactly when pause is set, halted exactly when halt is set, current_tick
// only for the tick after tick_count, epoch.tick <= tick_count, and the
// window's spent not above the lifetime's), a valid name and status,
// non-negative counters and well-formed gates. It returns a
// *filetxn.FormatError whose Key is the key at fault.
func (d *Doc) validate() error {
	inv := invariant
	switch {
	case d.schema != schemaVersion:
		return malformed("schema", "major %d, this reader knows %d", d.schema, schemaVersion)
	case !validName(d.Name):
		return inv("name", invName, "name %q", d.Name)
	case d.Status != Running && d.Status != Paused && d.Status != Halted:
		return inv("status", invStatus, "status %q", d.Status)
	case (d.Status == Paused) != (d.Paused != nil):
		return inv("pause", invPaused, "status is %q and pause is %s", d.Status, setOrNull(d.Paused != nil))
	case (d.Status == Halted) != (d.Halted != nil):
		return inv("halt", invHalted, "status is %q and halt is %s", d.Status, setOrNull(d.Halted != nil))
	}
	for _, c := range []struct {
		key string
		v   int64
	}{
		{"tick_count", d.TickCount}, {"resumed_count", d.ResumedCount}, {"consecutive_failures", d.ConsecutiveFailures},
		{"failures_total", d.FailuresTotal}, {"epoch.tick", d.Epoch.Tick},
	} {
		if c.v < 0 {
			return inv(c.key, "counters are non-negative", "%s is %d", c.key, c.v)
		}
	}
	switch {
	case !validCost(d.Spent):
		return inv("spent", "spent is finite and non-negative", "spent %+v", d.Spent)
	case !validCost(d.Epoch.Spent):
		return inv("epoch.spent", "spent is finite and non-negative", "epoch.spent %+v", d.Epoch.Spent)
	case d.current != nil && (d.TickCount == math.MaxInt64 || d.current.N != d.TickCount+1):
		return inv("current_tick", invCurrentTick, "current_tick.n is %d, tick_count is %d", d.current.N, d.TickCount)
	case d.Epoch.Tick > d.TickCount:
		return inv("epoch.tick", invEpochTick, "epoch.tick is %d, tick_count is %d", d.Epoch.Tick, d.TickCount)
	case d.Epoch.Spent.USD > d.Spent.USD || d.Epoch.Spent.Tokens > d.Spent.Tokens || d.Epoch.Spent.Seconds > d.Spent.Seconds:
		return inv("epoch.spent", invEpochSpent, "epoch.spent %+v, spent %+v", d.Epoch.Spent, d.Spent)
	}
	if err := d.Gates.validate(); err != nil {
		return err
	}
	if d.Halted != nil {
		if len(d.Halted.Gates) == 0 {
			return inv("halt.gates", invHalted, "halt.gates is empty")
		}
		for _, g := range d.Halted.Gates {
			if !slices.Contains(gateOrder, g) {
				return inv("halt.gates", invHalted, "halt.gates names unknown gate %q", g)
			}
		}
	}
	// Fields an event's key does not hold.
	for _, c := range []struct {
		key   string
		field bool
	}{
		{"pause.tick", d.Paused != nil && d.Paused.Tick != 0},
		{"pause.gates", d.Paused != nil && len(d.Paused.Gates) != 0},
		{"halt.by", d.Halted != nil && d.Halted.By != ""},
		{"last_approval.gates", d.LastApproval != nil && len(d.LastApproval.Gates) != 0},
	} {
		if c.field {
			return malformed(c.key, "set, but the format has no such key")
		}
	}
	if d.current != nil && d.current.PID <= 0 {
		return inv("current_tick.pid", invCurrentTick, "current_tick.pid is %d", d.current.PID)
	}
	return nil
}

func validCost(c Cost) bool {
	ok := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 }
	return ok(c.USD) && ok(c.Seconds) && c.Tokens >= 0
}

func setOrNull(set bool) string {
	if set {
		return "set"
	}
	return "null"
}
