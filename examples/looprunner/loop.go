package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

// loopFlags registers -root, which defaults to $LOOPSTATE_ROOT (set for a
// tick's harness, so that a harness can run loop commands on its own loop).
func loopFlags(fset *flag.FlagSet) *string {
	return fset.String("root", os.Getenv(loopstate.EnvRoot), "the loops' root directory (default $"+loopstate.EnvRoot+")")
}

// openRoot returns the Root in dir, with the wait message on every lock.
// A loop's lock is its own .state.lock, not a sidecar: -state-dir does not
// apply.
func (c *cli) openRoot(dir string, opts ...lock.Option) (*loopstate.Root, error) {
	if dir == "" {
		return nil, usagef("missing -root")
	}
	if len(opts) == 0 {
		opts = []lock.Option{c.waitReport()}
	}
	return loopstate.NewRoot(dir, loopstate.WithLockOptions(opts...)), nil
}

// openLoop parses "-root DIR NAME" and opens the loop.
func (c *cli) openLoop(fset *flag.FlagSet, root *string, args []string) (*loopstate.Loop, error) {
	name, err := c.parseOne(fset, args, "loop name")
	if err != nil {
		return nil, err
	}
	r, err := c.openRoot(*root)
	if err != nil {
		return nil, err
	}
	return r.Open(context.Background(), name)
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
	b, err := loopstate.Codec{}.Encode(d)
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
type (
	optInt   struct{ p **int64 }
	optFloat struct{ p **float64 }
	optTime  struct{ p **time.Time }
	optDur   struct{ p **float64 } // a duration, stored in seconds
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
		return errors.New("want an integer")
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
	if err != nil {
		return errors.New("want a number")
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
		return errors.New("want a duration such as 90s")
	}
	secs := v.Seconds()
	*o.p = &secs
	return nil
}

func loopCreate(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	var t loopstate.Template
	fset.StringVar(&t.Name, "template", "", "the template it is created from (recorded)")
	fset.BoolVar(&t.Paused, "paused", false, "create it paused")
	fset.BoolVar(&t.Schedule.Enabled, "schedule", false, "let scheduled ticks run")
	fset.StringVar(&t.Schedule.Every, "every", "", "the schedule's period, for the external timer (such as 15m)")
	g := &t.Gates
	fset.Var(optInt{&g.MaxTicks}, "max-ticks", "halt after N ticks in the window")
	fset.Var(optInt{&g.MaxConsecutiveFailures}, "max-consecutive-failures", "halt after N failed ticks in a row")
	fset.Var(optInt{&g.MaxFailuresTotal}, "max-failures-total", "halt after N failed ticks in all")
	fset.Var(optFloat{&g.Budget.USD}, "budget-usd", "halt once the window has spent X dollars")
	fset.Var(optInt{&g.Budget.Tokens}, "budget-tokens", "halt once the window has spent N tokens")
	fset.Var(optFloat{&g.Budget.Seconds}, "budget-seconds", "halt once the window has spent X seconds")
	fset.Var(optTime{&g.ExpiresAt}, "expires-at", "halt at this time (RFC 3339)")
	fset.Var(optInt{&g.CheckpointEvery}, "checkpoint-every", "halt for a review every N ticks of the window")
	fset.Var(optDur{&g.TickTimeout}, "tick-timeout", "the harness's wall timeout (default 30m)")
	name, err := c.parseOne(fset, args, "loop name")
	if err != nil {
		return err
	}
	r, err := c.openRoot(*root)
	if err != nil {
		return err
	}
	l, err := r.Create(context.Background(), name, t)
	if err != nil {
		return err
	}
	return c.showState(l, fmt.Sprintf("created %s in %s", l.Name(), l.Dir()))
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
	by := fset.String("by", whoami(), "who pauses it")
	reason := fset.String("reason", "", "why")
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
	by := fset.String("by", whoami(), "who approves")
	note := fset.String("note", "", "why")
	return c.loopTransition(fset, root, args, func(l *loopstate.Loop, ctx context.Context) error {
		return l.Approve(ctx, *by, *note)
	}, "approved, running in a new gate window")
}

func loopCheckGate(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	return c.loopTransition(fset, loopFlags(fset), args, (*loopstate.Loop).CheckGate, "no gate tripped")
}

func loopEnableSchedule(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	return c.loopTransition(fset, loopFlags(fset), args, (*loopstate.Loop).EnableSchedule, "schedule enabled")
}

func loopDisableSchedule(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	return c.loopTransition(fset, loopFlags(fset), args, (*loopstate.Loop).DisableSchedule, "schedule disabled")
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
	if d.CurrentTick != nil {
		fmt.Fprintf(tw, "tick running\t%d, pid %d, since %s\n", d.CurrentTick.N, d.CurrentTick.PID, d.CurrentTick.StartedAt.Format(time.RFC3339))
	}
	if d.Paused != nil {
		fmt.Fprintf(tw, "paused\tby %s at %s: %s\n", d.Paused.By, d.Paused.At.Format(time.RFC3339), d.Paused.Reason)
	}
	if d.Halted != nil {
		fmt.Fprintf(tw, "halted\tat tick %d, %s: %s\n", d.Halted.Tick, d.Halted.At.Format(time.RFC3339), d.Halted.Reason)
	}
	return tw.Flush()
}

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
	addInt(loopstate.GateMaxTicks, g.MaxTicks)
	addInt(loopstate.GateMaxConsecutiveFailures, g.MaxConsecutiveFailures)
	addInt(loopstate.GateMaxFailuresTotal, g.MaxFailuresTotal)
	addFloat(loopstate.GateBudgetUSD, g.Budget.USD)
	addInt(loopstate.GateBudgetTokens, g.Budget.Tokens)
	addFloat(loopstate.GateBudgetSeconds, g.Budget.Seconds)
	if g.ExpiresAt != nil {
		s = append(s, loopstate.GateExpiresAt+" "+g.ExpiresAt.Format(time.RFC3339))
	}
	addInt(loopstate.GateCheckpointEvery, g.CheckpointEvery)
	s = append(s, "tick timeout "+g.Timeout().String())
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
	if err := c.parseNoArgs(fset, args); err != nil {
		return err
	}
	r, err := c.openRoot(*root)
	if err != nil {
		return err
	}
	ls, err := r.List(context.Background())
	if err != nil {
		return err
	}
	// A state file that is refused is reported on stderr, one line each,
	// and makes the exit code 65; the others are listed.
	var bad error
	for _, l := range ls {
		if l.Err != nil {
			fmt.Fprintf(c.stderr, "%s: %s\n", c.name, message(l.Err))
			bad = &dataError{fmt.Errorf("%d loop(s) not listed: their state is refused", countErrs(ls))}
		}
	}
	if c.json {
		out := []json.RawMessage{}
		for _, l := range ls {
			if l.Err == nil {
				raw, err := stateJSON(l.State)
				if err != nil {
					return err
				}
				out = append(out, raw)
			}
		}
		if err := c.printJSON(out); err != nil {
			return err
		}
		return bad
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tSTATUS\tTICKS\tLAST TICK\tAPPROVALS\tHALTED BY\tSCHEDULE\n")
	for _, l := range ls {
		if l.Err != nil {
			continue
		}
		d := l.State
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

func countErrs(ls []loopstate.Listing) int {
	n := 0
	for _, l := range ls {
		if l.Err != nil {
			n++
		}
	}
	return n
}

// tickJSON is a tick's record as the tick log writes it (the format's
// section 4).
type tickJSON struct {
	N            int64     `json:"n"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at"`
	Outcome      string    `json:"outcome"`
	SkipReason   *string   `json:"skip_reason"`
	StatusBefore string    `json:"status_before"`
	StatusAfter  string    `json:"status_after"`
	ExitCode     *int      `json:"exit_code"`
	Cost         costJSON  `json:"cost"`
	GatesTripped []string  `json:"gates_tripped"`
	Trigger      string    `json:"trigger"`
	PID          int       `json:"pid"`
	Note         string    `json:"note"`
}

func tickRecordJSON(r loopstate.TickRecord) tickJSON {
	t := tickJSON{
		N: r.N, StartedAt: r.StartedAt, EndedAt: r.EndedAt, Outcome: string(r.Outcome),
		StatusBefore: string(r.StatusBefore), StatusAfter: string(r.StatusAfter), ExitCode: r.ExitCode,
		Cost: costJSON(r.Cost), GatesTripped: nonNil(r.GatesTripped), Trigger: string(r.Trigger), PID: r.PID, Note: r.Note,
	}
	if r.SkipReason != "" {
		s := string(r.SkipReason)
		t.SkipReason = &s
	}
	return t
}

// costJSON is a cost with the format's keys.
type costJSON struct {
	USD     float64 `json:"usd"`
	Tokens  int64   `json:"tokens"`
	Seconds float64 `json:"seconds"`
}

func loopTick(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	root := loopFlags(fset)
	trigger := fset.String("trigger", string(loopstate.TriggerManual), "manual (waits up to -lock-timeout for the lock) or schedule (never waits; runs only when the schedule is enabled)")
	timeout := fset.Duration("timeout", 0, "the harness's wall timeout for this tick (default: the loop's tick_timeout_s)")
	pos, argv, err := c.parseDashDash(fset, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one loop name, got %d arguments", len(pos))
	}
	if len(argv) == 0 {
		return usagef("missing the harness: loop tick NAME -- CMD [ARG...]")
	}
	trig := loopstate.Trigger(*trigger)
	if trig != loopstate.TriggerManual && trig != loopstate.TriggerSchedule {
		return usagef("-trigger %q: want manual or schedule", *trigger)
	}
	r, err := c.openRoot(*root)
	if err != nil {
		return err
	}
	l, err := r.Open(context.Background(), pos[0])
	if err != nil {
		return err
	}
	// The harness's standard output goes to ours, or to stderr with -json,
	// where stdout holds the one JSON document.
	var out io.Writer = c.stdout
	if c.json {
		out = c.stderr
	}
	cmd := &loopstate.Command{Path: argv[0], Args: argv[1:], Stdout: out, Stderr: c.stderr}
	harness := func(hctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		if *timeout <= 0 {
			return cmd.Run(hctx, run)
		}
		tctx, stop := context.WithTimeout(hctx, *timeout)
		defer stop()
		res, err := cmd.Run(tctx, run)
		if errors.Is(tctx.Err(), context.DeadlineExceeded) && hctx.Err() == nil {
			res.Failed = true
			res.Note = strings.TrimSpace(fmt.Sprintf("timed out after %s (-timeout) %s", *timeout, res.Note))
		}
		return res, err
	}
	// -lock-timeout bounds the wait for the lock alone; the harness is
	// bounded by the loop's tick timeout (and -timeout).
	rec, err := l.Tick(context.Background(), trig, harness, loopstate.WithLockTimeout(c.lockTimeout))
	if rec.Outcome != "" {
		if c.json {
			if perr := c.printJSON(tickRecordJSON(rec)); perr != nil {
				return perr
			}
		} else {
			c.printf("%s\n", tickText(l.Name(), rec))
		}
	}
	return err
}

func tickText(name string, r loopstate.TickRecord) string {
	s := fmt.Sprintf("%s: tick %d: %s", name, r.N, r.Outcome)
	if r.SkipReason != "" {
		s += " (" + string(r.SkipReason) + ")"
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
