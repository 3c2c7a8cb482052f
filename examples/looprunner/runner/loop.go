package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/loopstate"
	"github.com/filetxn/filetxn/loopstate/harness"
)

// The names of a loop's directory layout (docs/formats/loopstate.md): the
// root holds the loops in loopsDir/NAME, each with its lock file.
const (
	loopsDir     = "loops"
	loopLockFile = ".state.lock"
)

// loopFlags registers -root, which defaults to $LOOPSTATE_ROOT (set for a
// tick's harness, so that a harness can run loop commands on its own loop).
// Every loop command requires it.
func loopFlags(fset *flag.FlagSet) *string {
	return fset.String("root", os.Getenv(harness.EnvRoot), "the root `DIR`, which holds the loops in DIR/"+loopsDir+"/NAME (default $"+harness.EnvRoot+", which a tick sets for its harness)")
}

// openRoot returns the Root in dir, with the wait message on every lock.
// A loop's lock is its own .state.lock, not a sidecar: -state-dir does not
// apply. A root that does not exist is a not-found error (exit 3), unless
// create is set: loop create makes it.
func (c *cli) openRoot(dir string, create bool) (*loopstate.Root, error) {
	if dir == "" {
		return nil, usagef("missing -root")
	}
	if err := c.checkLoops(); err != nil {
		return nil, err
	}
	ext, err := c.storeOptions()
	if err != nil {
		return nil, err
	}
	if !create && len(ext) == 0 {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, notFoundf("no such root: -root %s does not exist", dir)
		}
	}
	return c.newRoot(dir, ext)
}

// newRoot returns the Root in dir with the wait message on every lock and
// the extensions' options ext, which win: on a backend, the loops are its
// documents, and dir only names them.
func (c *cli) newRoot(dir string, ext []filetxn.Option) (*loopstate.Root, error) {
	return loopstate.NewRoot(dir, append([]filetxn.Option{filetxn.WithLockOptions(c.waitReport())}, ext...)...)
}

// openLoop parses "-root DIR NAME" and opens the loop.
func (c *cli) openLoop(fset *flag.FlagSet, root *string, args []string) (*loopstate.Loop, error) {
	name, err := c.parseOne(fset, args, "loop name", "root")
	if err != nil {
		return nil, err
	}
	return c.openNamed(*root, name)
}

// openNamed opens the loop name in the root dir. A name that can never
// name a loop (../x, a/b, 300 characters) is a usage error (exit 2) before
// any file is looked at: loopstate's Open checks it first. A root that does
// not exist is then a not-found error (exit 3), as in openRoot.
func (c *cli) openNamed(dir, name string) (*loopstate.Loop, error) {
	if dir == "" {
		return nil, usagef("missing -root")
	}
	if err := c.checkLoops(); err != nil {
		return nil, err
	}
	ext, err := c.storeOptions()
	if err != nil {
		return nil, err
	}
	r, err := c.newRoot(dir, ext)
	if err != nil {
		return nil, err
	}
	l, err := r.Open(context.Background(), name)
	if errors.Is(err, filetxn.ErrNotFound) && len(ext) == 0 {
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			return nil, notFoundf("no such root: -root %s does not exist", dir)
		}
	}
	return l, err
}

// loopCtx bounds the wait for a loop's lock by -lock-timeout. With 0 the
// context has already ended, and the lock is tried once.
func (c *cli) loopCtx() (context.Context, context.CancelFunc) {
	if c.lockTimeout <= 0 {
		return context.WithDeadline(context.Background(), time.Now())
	}
	return context.WithTimeout(context.Background(), c.lockTimeout)
}

// whoami names the operator in pause and approve records.
func whoami() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "looprunner"
}

// stateJSON returns the loop's state document, exactly as the file holds it.
func stateJSON(d *loopstate.Doc) (json.RawMessage, error) {
	b, err := d.MarshalJSON()
	return json.RawMessage(b), err
}

// showState prints the loop's state after a successful command: the state
// document with -json, else done (a line).
func (c *cli) showState(l *loopstate.Loop, done string) error {
	if !c.json {
		c.printf("%s\n", done)
		return nil
	}
	d, err := l.View(context.Background())
	if err != nil {
		return err
	}
	raw, err := stateJSON(d)
	if err != nil {
		return err
	}
	return c.printJSON(raw)
}

// Optional thresholds: a gate flag that is not given leaves the gate off.
// Each refuses what the gate would refuse, so that the error names the flag
// rather than the state file's key.
type (
	optInt struct {
		p   **int64
		min int64 // the least value allowed
	}
	optFloat struct{ p **float64 }   // a finite number, at least 0
	optTime  struct{ p **time.Time } // whole seconds
	optDur   struct{ p **float64 }   // a positive duration, stored in seconds
)

func (o optInt) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatInt(**o.p, 10)
}

func (o optInt) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("want an integer such as 10")
	}
	if v < o.min {
		return fmt.Errorf("want an integer of at least %d", o.min)
	}
	*o.p = &v
	return nil
}

func (o optFloat) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatFloat(**o.p, 'g', -1, 64)
}

func (o optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return errors.New("want a number such as 2.5")
	}
	if v < 0 {
		return errors.New("want a number of at least 0")
	}
	*o.p = &v
	return nil
}

func (o optTime) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return (*o.p).Format(time.RFC3339)
}

func (o optTime) Set(s string) error {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return errors.New("want an RFC 3339 time such as 2026-07-01T18:00:00Z")
	}
	if v.Nanosecond() != 0 {
		return errors.New("want whole seconds")
	}
	*o.p = &v
	return nil
}

func (o optDur) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return time.Duration(**o.p * float64(time.Second)).String()
}

func (o optDur) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration with a unit, such as 90s or 30m")
	}
	if v <= 0 {
		return errors.New("want a positive duration")
	}
	secs := v.Seconds()
	*o.p = &secs
	return nil
}

// loopCreateDetails is the help of loop create after its flags.
const loopCreateDetails = `A gate flag that is not given leaves its gate off. The schedule is for an
external timer (cron, a systemd timer) that runs 'loop tick -trigger schedule':
-schedule lets such ticks run (else they are skipped, see enable-schedule), and
-every records the timer's period for people and tools that read the state;
looprunner itself never ticks on its own.

The root holds the loops in DIR/loops/NAME: -root . creates ./loops/NAME.
`

func loopCreate(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	var (
		template string
		paused   bool
		sched    loopstate.Schedule
		gates    loopstate.Gates
	)
	fset.StringVar(&template, "template", "", "the `TEMPLATE` it is created from (recorded in the state)")
	fset.BoolVar(&paused, "paused", false, "create it paused")
	fset.BoolVar(&sched.Enabled, "schedule", false, "let scheduled ticks run from the start")
	fset.StringVar(&sched.Every, "every", "", "the schedule's `PERIOD`, such as 15m, recorded for the external timer")
	g := &gates
	fset.Var(optInt{&g.MaxTicks, 0}, "max-ticks", "halt after `N` ticks in the window")
	fset.Var(optInt{&g.MaxConsecutiveFailures, 0}, "max-consecutive-failures", "halt after `N` failed ticks in a row")
	fset.Var(optInt{&g.MaxFailuresTotal, 0}, "max-failures-total", "halt after `N` failed ticks in all")
	fset.Var(optFloat{&g.BudgetUSD}, "budget-usd", "halt once the window has spent `USD` dollars")
	fset.Var(optInt{&g.BudgetTokens, 0}, "budget-tokens", "halt once the window has spent `N` tokens")
	fset.Var(optFloat{&g.BudgetSeconds}, "budget-seconds", "halt once the window has spent `SECONDS` seconds of harness time")
	fset.Var(optTime{&g.ExpiresAt}, "expires-at", "halt at `TIME` (RFC 3339, such as 2026-07-01T18:00:00Z)")
	fset.Var(optInt{&g.CheckpointEvery, 1}, "checkpoint-every", "halt for a review every `N` ticks of the window")
	fset.Var(optDur{&g.TickTimeout}, "tick-timeout", "the harness's wall timeout, a `DURATION` such as 90s (default 30m)")
	name, err := c.parseOne(fset, args, "loop name", "root")
	if err != nil {
		return err
	}
	r, err := c.openRoot(*root, true)
	if err != nil {
		return err
	}
	var statErr error
	l, err := r.Create(context.Background(), name, func(d *loopstate.Doc) error {
		// Create calls fn after its check of the name and before any I/O: a
		// name that can never be valid is refused (exit 2) before anything
		// on disk is looked at, this stat included.
		_, statErr = os.Stat(filepath.Join(*root, loopsDir))
		d.Template, d.Gates, d.Schedule = template, gates, sched
		if paused {
			d.Status = loopstate.Paused
			d.Paused = &loopstate.Event{At: d.CreatedAt, By: "create", Reason: "created paused"}
		}
		return nil
	})
	if err != nil {
		return err
	}
	dir := filepath.Dir(l.LockPath()) // the loop's directory
	if filepath.Base(filepath.Clean(*root)) == loopsDir && errors.Is(statErr, fs.ErrNotExist) {
		// -root loops makes loops/loops/NAME, which is rarely what was
		// meant: say so, once, where it cannot be missed.
		fmt.Fprintf(c.stderr, "%s: note: -root is the directory that holds %s/: this loop is %s (for %s, give -root %s)\n",
			c.name, loopsDir, dir, filepath.Join(*root, name), filepath.Dir(filepath.Clean(*root)))
	}
	return c.showState(l, fmt.Sprintf("created %s in %s", l.Name(), dir))
}

// loopTransition runs one operator command on the loop named in args: it
// parses fset (which the caller has given the command's own flags), opens
// the loop, runs act within -lock-timeout and shows the state with
// "<name>: <done>".
func (c *cli) loopTransition(fset *flag.FlagSet, root *string, args []string, act func(*loopstate.Loop, context.Context) error, done string) error {
	l, err := c.openLoop(fset, root, args)
	if err != nil {
		return err
	}
	ctx, cancel := c.loopCtx()
	defer cancel()
	if err := act(l, ctx); err != nil {
		return err
	}
	return c.showState(l, l.Name()+": "+done)
}

func loopPause(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	by := fset.String("by", whoami(), "the `NAME` recorded as who paused it")
	reason := fset.String("reason", "", "the `REASON` recorded")
	return c.loopTransition(fset, root, args, func(l *loopstate.Loop, ctx context.Context) error {
		return l.Pause(ctx, *by, *reason)
	}, "paused")
}

func loopResume(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	return c.loopTransition(fset, loopFlags(fset), args, (*loopstate.Loop).Resume, "running")
}

func loopApprove(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	by := fset.String("by", whoami(), "the `NAME` recorded as who approved it")
	note := fset.String("note", "", "a `NOTE` recorded with the approval")
	return c.loopTransition(fset, root, args, func(l *loopstate.Loop, ctx context.Context) error {
		return l.Approve(ctx, *by, *note)
	}, "approved, running in a new gate window")
}

// loopCheckGate is check-gate: exit 0 when the loop may go on, 4 when it is
// halted (by this check or before it), 5 when it is paused.
func loopCheckGate(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	return c.loopTransition(fset, loopFlags(fset), args, func(l *loopstate.Loop, ctx context.Context) error {
		err := l.CheckGate(ctx)
		var ge *loopstate.GuardError
		if errors.As(err, &ge) {
			switch ge.Status {
			case loopstate.Halted:
				return &codeError{exitHalted, err.Error()}
			case loopstate.Paused:
				return &codeError{exitPaused, err.Error()}
			}
		}
		return err
	}, "no gate tripped")
}

func loopEnableSchedule(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	return c.loopTransition(fset, loopFlags(fset), args, func(l *loopstate.Loop, ctx context.Context) error {
		return l.SetSchedule(ctx, true)
	}, "schedule enabled")
}

func loopDisableSchedule(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	return c.loopTransition(fset, loopFlags(fset), args, func(l *loopstate.Loop, ctx context.Context) error {
		return l.SetSchedule(ctx, false)
	}, "schedule disabled")
}

func loopDelete(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	l, err := c.openLoop(fset, root, args)
	if err != nil {
		return err
	}
	ctx, cancel := c.loopCtx()
	defer cancel()
	if err := l.Delete(ctx); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(struct {
			Name    string `json:"name"`
			Deleted bool   `json:"deleted"`
		}{l.Name(), true})
	}
	c.printf("%s: deleted\n", l.Name())
	return nil
}

func loopShow(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	l, err := c.openLoop(fset, root, args)
	if err != nil {
		return err
	}
	d, err := l.View(context.Background())
	if err != nil {
		return err
	}
	if c.json {
		raw, err := stateJSON(d)
		if err != nil {
			return err
		}
		return c.printJSON(raw)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name\t%s\n", d.Name)
	fmt.Fprintf(tw, "status\t%s\n", d.Status)
	fmt.Fprintf(tw, "ticks\t%d (failures: %d in a row, %d in all; approvals: %d)\n", d.TickCount, d.ConsecutiveFailures, d.FailuresTotal, d.ResumedCount)
	fmt.Fprintf(tw, "spent\t$%.2f, %d tokens, %.1fs\n", d.Spent.USD, d.Spent.Tokens, d.Spent.Seconds)
	if !d.LastTickAt.IsZero() {
		fmt.Fprintf(tw, "last tick\t%s\n", d.LastTickAt.Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "gates\t%s\n", gatesText(d.Gates))
	fmt.Fprintf(tw, "schedule\t%s\n", scheduleText(d.Schedule))
	if ct, err := currentTick(d); err != nil {
		return err
	} else if ct != nil {
		fmt.Fprintf(tw, "tick running\t%d, pid %d, since %s\n", ct.N, ct.PID, ct.StartedAt.Format(time.RFC3339))
	}
	if d.Paused != nil {
		fmt.Fprintf(tw, "paused\tby %s at %s: %s\n", d.Paused.By, d.Paused.At.Format(time.RFC3339), d.Paused.Reason)
	}
	if d.Halted != nil {
		fmt.Fprintf(tw, "halted\tat tick %d, %s: %s\n", d.Halted.Tick, d.Halted.At.Format(time.RFC3339), d.Halted.Reason)
	}
	return tw.Flush()
}

// runningTick is a state's current_tick (docs/formats/loopstate.md): the
// tick in progress, which loopstate keeps as its own bookkeeping.
type runningTick struct {
	N         int64     `json:"n"`
	StartedAt time.Time `json:"started_at"`
	PID       int       `json:"pid"`
}

// currentTick returns the tick in progress in d's state document, nil for
// none.
func currentTick(d *loopstate.Doc) (*runningTick, error) {
	raw, err := stateJSON(d)
	if err != nil {
		return nil, err
	}
	var st struct {
		CurrentTick *runningTick `json:"current_tick"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	return st.CurrentTick, nil
}

// defaultTickTimeout is the harness's wall timeout of a loop whose
// gates.tick_timeout_s is null (loopstate.Gates.TickTimeout).
const defaultTickTimeout = 30 * time.Minute

func gatesText(g loopstate.Gates) string {
	var s []string
	addInt := func(k string, v *int64) {
		if v != nil {
			s = append(s, fmt.Sprintf("%s %d", k, *v))
		}
	}
	addFloat := func(k string, v *float64) {
		if v != nil {
			s = append(s, fmt.Sprintf("%s %g", k, *v))
		}
	}
	addInt("max_ticks", g.MaxTicks)
	addInt("max_consecutive_failures", g.MaxConsecutiveFailures)
	addInt("max_failures_total", g.MaxFailuresTotal)
	addFloat("budget.usd", g.BudgetUSD)
	addInt("budget.tokens", g.BudgetTokens)
	addFloat("budget.seconds", g.BudgetSeconds)
	if g.ExpiresAt != nil {
		s = append(s, "expires_at "+g.ExpiresAt.Format(time.RFC3339))
	}
	addInt("checkpoint_every", g.CheckpointEvery)
	timeout := defaultTickTimeout
	if g.TickTimeout != nil {
		timeout = time.Duration(*g.TickTimeout * float64(time.Second))
	}
	s = append(s, "tick timeout "+timeout.String())
	return strings.Join(s, ", ")
}

func scheduleText(s loopstate.Schedule) string {
	out := "disabled"
	if s.Enabled {
		out = "enabled"
	}
	if s.Every != "" {
		out += ", every " + s.Every
	}
	return out
}

func loopList(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	if err := c.parseNoArgs(fset, args, "root"); err != nil {
		return err
	}
	r, err := c.openRoot(*root, false)
	if err != nil {
		return err
	}
	loops, err := r.List(context.Background())
	if err != nil {
		return err
	}
	// A state file that is refused is reported on stderr, one line each,
	// and makes the exit code 65; the others are listed. A loop deleted
	// since List found it is left out.
	var states []*loopstate.Doc
	refused := 0
	for _, l := range loops {
		d, err := l.View(context.Background())
		switch {
		case errors.Is(err, filetxn.ErrNotFound):
			continue
		case err != nil:
			fmt.Fprintf(c.stderr, "%s: %s\n", c.name, c.message(err))
			refused++
			continue
		}
		states = append(states, d)
	}
	var bad error
	if refused > 0 {
		bad = &dataError{fmt.Errorf("%s not listed: each refused state is named above", count(refused, "loop"))}
	}
	if c.json {
		out := []json.RawMessage{}
		for _, d := range states {
			raw, err := stateJSON(d)
			if err != nil {
				return err
			}
			out = append(out, raw)
		}
		if err := c.printJSON(out); err != nil {
			return err
		}
		return bad
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tSTATUS\tTICKS\tLAST TICK\tAPPROVALS\tHALTED BY\tSCHEDULE\n")
	for _, d := range states {
		last, halt := "-", "-"
		if !d.LastTickAt.IsZero() {
			last = d.LastTickAt.Format(time.RFC3339)
		}
		if d.Halted != nil {
			halt = strings.Join(d.Halted.Gates, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", d.Name, d.Status, d.TickCount, last, d.ResumedCount, halt, scheduleText(d.Schedule))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bad
}

// loopTickDetails is the help of loop tick after its flags.
const loopTickDetails = `CMD runs in the loop's directory with the loop's lock handed over, so it may
run 'looprunner loop check-gate' or 'loop pause' on its own loop, and with
LOOPSTATE_ROOT, LOOPSTATE_LOOP and LOOPSTATE_TICK set. Exit code 0 is an ok
tick, anything else a failed one. CMD reports what the tick cost as its last
line on standard output, a JSON object:

  {"cost": {"usd": 0.09, "tokens": 21000, "seconds": 63.0}, "note": "3 issues triaged"}

Every key is optional (a missing seconds is the wall time). Without such a
line the cost is zero and the seconds are the wall time; a last line that
names "cost" but is not such an object counts as no cost and is reported,
in the tick's note and on stderr. With -json, CMD's standard output goes to stderr, so that stdout
holds only the tick's record.

Exit codes: 0 the tick ran and CMD succeeded, or the tick was skipped because
the loop is paused, its schedule is disabled (-trigger schedule) or another
tick holds the lock (-trigger schedule); 4 the loop is halted (by this tick,
or the tick was skipped because it already was); 6 CMD failed; 124 CMD timed
out and was killed; 126 CMD could not be started; 127 CMD was not found;
75 the lock was busy past -lock-timeout (-trigger manual), or another tick's
runner still runs after its lock file was removed or replaced (every other
loop command exits 75 then too; that runner records its tick once it holds
the lock again).

SIGINT or SIGTERM ends a running tick as its timeout does: CMD's process group
gets SIGTERM, then SIGKILL after 10s, and the tick is logged as failed
("runner cancelled"), exit 6 (4 if that failure halts the loop).
`

func loopTick(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	trigger := fset.String("trigger", string(loopstate.TriggerManual), "`TRIGGER`: manual (waits up to -lock-timeout for the lock) or schedule (never waits; runs only when the schedule is enabled)")
	var timeout time.Duration
	fset.Var(durationValue{&timeout}, "timeout", "the harness's wall timeout for this tick, a `DURATION` (default: the loop's -tick-timeout)")
	pos, argv, err := c.parseDashDash(fset, args, "root")
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one loop name, got %s", count(len(pos), "argument"))
	}
	if len(argv) == 0 {
		return usagef("missing the harness: loop tick NAME -- CMD [ARG...]")
	}
	trig := loopstate.Trigger(*trigger)
	if trig != loopstate.TriggerManual && trig != loopstate.TriggerSchedule {
		return usagef("-trigger %q: want manual or schedule", *trigger)
	}
	l, err := c.openNamed(*root, pos[0])
	if err != nil {
		return err
	}
	// The harness's standard output goes to ours, or to stderr with -json,
	// where stdout holds the one JSON document.
	var out io.Writer = c.stdout
	if c.json {
		out = c.stderr
	}
	// A reader that goes away (loop tick | head -1) must not kill the runner
	// with SIGPIPE mid-tick: the harness's output is still read (Command
	// ignores a failed copy), the tick ends with its cost line, and the
	// failed stdout then fails the command (see run). Notify, unlike Ignore,
	// is not inherited by the harness.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	cmd := &harness.Command{Path: argv[0], Args: argv[1:], Stdout: out, Stderr: c.stderr}
	var startErr error // the harness could not be started
	timedOut := false  // the harness ran past -timeout
	// SIGINT or SIGTERM while the harness runs ends the tick's context as a
	// timeout would: the harness's process group gets SIGTERM, then
	// SIGKILL, and the tick is settled as failed ("runner cancelled") under
	// the lock. Dying at once instead would leave what the harness started
	// running with the loop's lock held. The handler is installed when the
	// harness starts, under the lock: a signal while the tick still waits
	// for the lock ends the runner as it always did (it holds nothing yet),
	// rather than ending the wait as a busy lock (exit 75) that a
	// supervisor would retry.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-sctx.Done():
		}
	}()
	fn := func(hctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		tctx := hctx
		if timeout > 0 {
			var stop context.CancelFunc
			tctx, stop = context.WithTimeout(hctx, timeout)
			defer stop()
		}
		res, err := cmd.Run(tctx, run)
		startErr = err
		if err == nil && timeout > 0 && errors.Is(tctx.Err(), context.DeadlineExceeded) && hctx.Err() == nil {
			timedOut = true
			res.Failed = true
			res.Note = strings.TrimSpace(fmt.Sprintf("timed out after %s (-timeout) %s", timeout, res.Note))
		}
		return res, err
	}
	// -lock-timeout bounds the wait for the lock alone; the harness is
	// bounded by the loop's tick timeout (and -timeout), and by a signal.
	rec, err := l.Tick(sctx, trig, fn, loopstate.WithLockTimeout(c.lockTimeout))
	if rec.Outcome != "" {
		if c.json {
			if perr := c.printJSON(rec); perr != nil {
				return perr
			}
		} else {
			c.printf("%s\n", tickText(l.Name(), rec))
		}
	}
	if _, malformed, ok := strings.Cut(rec.Note, malformedCost); ok && rec.Outcome != loopstate.Skipped {
		// The harness got its cost line wrong: the record's note says so,
		// and so does stderr, where a person sees it.
		fmt.Fprintf(c.stderr, "%s: %s: tick %d: %s%s\n", c.name, l.Name(), rec.N, malformedCost, malformed)
	}
	if err != nil {
		return err
	}
	if rec.StatusAfter == loopstate.Halted && rec.StatusBefore != loopstate.Halted {
		// The tick halted the loop: exit 4, with the halt's reasons.
		why := strings.Join(rec.GatesTripped, ", ")
		if d, verr := l.View(context.Background()); verr == nil && d.Halted != nil {
			why = d.Halted.Reason
		}
		return &codeError{exitHalted, fmt.Sprintf("%s: halted (%s)", l.Name(), why)}
	}
	return tickExit(l.Name(), rec, startErr, timedOut)
}

// tickExit returns the error that gives a tick that ran without an error of
// its own the exit code a scheduler can act on (see loopTickDetails): nil
// for an ok tick or a skip that needs nobody, a *codeError else.
func tickExit(name string, rec loopstate.TickRecord, startErr error, timedOut bool) error {
	fail := func(code int, format string, args ...any) error {
		return &codeError{code, fmt.Sprintf("%s: tick %d: ", name, rec.N) + fmt.Sprintf(format, args...)}
	}
	note := rec.Note
	if !strings.HasPrefix(note, "timed out") {
		note = "timed out: " + note
	}
	switch {
	case rec.Outcome == loopstate.Skipped && rec.SkipReason == "halted":
		return fail(exitHalted, "skipped: the loop is halted (see loop approve)")
	case startErr != nil && (errors.Is(startErr, exec.ErrNotFound) || errors.Is(startErr, fs.ErrNotExist)):
		return fail(exitHarnessNotFound, "the harness was not found: %v", startErr)
	case startErr != nil:
		return fail(exitHarnessNoStart, "the harness could not be started: %v", startErr)
	case rec.Outcome == loopstate.Timeout || timedOut:
		return fail(exitHarnessTimeout, "%s", note)
	case rec.Outcome == loopstate.Fail:
		return fail(exitHarnessFailed, "the harness failed: %s", rec.Note)
	}
	return nil
}

// malformedCost starts what harness.Command adds to a tick's note when the
// harness's last line names "cost" but is not a cost line.
const malformedCost = "malformed cost line"

func tickText(name string, r loopstate.TickRecord) string {
	s := fmt.Sprintf("%s: tick %d: %s", name, r.N, r.Outcome)
	if r.SkipReason != "" {
		s += " (" + r.SkipReason + ")"
	}
	if r.ExitCode != nil {
		s += fmt.Sprintf(", exit %d", *r.ExitCode)
	}
	if r.Outcome != loopstate.Skipped {
		s += fmt.Sprintf(", %.3fs", r.Cost.Seconds)
	}
	if r.StatusAfter != r.StatusBefore {
		s += fmt.Sprintf(", now %s", r.StatusAfter)
	}
	if r.Note != "" {
		s += ": " + r.Note
	}
	return s
}
