package demo

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/etcd/internal/lin"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/loopstate"
)

// linTimeout bounds each linearizability check.
const linTimeout = time.Minute

// check is one row of the verdict's table.
type check struct {
	Name string `json:"name"`
	Got  string `json:"got"`
	Want string `json:"want"`
	OK   bool   `json:"ok"`
}

// verdict is the demo's result.
type verdict struct {
	Procs   int           `json:"procs"`
	Rounds  int           `json:"rounds"`
	TTL     time.Duration `json:"session_ttl_ns"`
	Checks  []check       `json:"checks"`
	Faults  []string      `json:"faults"`
	Fenced  []string      `json:"fenced"`  // the refused writes' errors
	Unknown []string      `json:"unknown"` // the errors of writes whose outcome was unknown, each retried
	Ledger  lin.Result    `json:"ledger_history"`
	Board   lin.Result    `json:"board_history"`
	Ticks   lin.Result    `json:"tick_history"`
	Up      time.Duration `json:"cluster_up_ns"`
	Race    time.Duration `json:"race_ns"`
	Check   time.Duration `json:"check_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Dir     string        `json:"dir,omitempty"` // "" when everything was removed
	OK      bool          `json:"ok"`
}

func (v *verdict) failed() int {
	n := 0
	for _, c := range v.Checks {
		if !c.OK {
			n++
		}
	}
	return n
}

// verify reads the ledger and the board back from etcd and checks them,
// and the workers' histories, against what the workers were told.
func (r *race) verify(ctx context.Context) (*verdict, error) {
	procs, rounds := r.cfg.procs, r.cfg.rounds
	v := &verdict{Procs: procs, Rounds: rounds, TTL: r.cfg.ttl, Faults: r.faults}
	equal := func(name string, got, want int) {
		v.Checks = append(v.Checks, check{name, strconv.Itoa(got), strconv.Itoa(want), got == want})
	}

	ls, err := ledger.Open(ledgerName, filetxn.WithBackend(r.b))
	if err != nil {
		return nil, err
	}
	d, err := ls.View(ctx)
	if err != nil {
		return nil, err
	}
	entries := map[string][]ledger.Entry{}
	for _, e := range d.Entries() {
		entries[e.ID] = append(entries[e.ID], e)
	}
	minted := map[string]bool{}
	appended, found, closes, kept := 0, 0, 0, 0
	for _, rep := range r.reports {
		for round, id := range rep.Appended {
			appended++
			minted[id] = true
			if es := entries[id]; len(es) == 1 && es[0].Title == demoTitle(rep.Worker, round) {
				found++
			}
		}
		for _, id := range rep.Closed {
			closes++
			if es := entries[id]; len(es) == 1 && es[0].Done() {
				kept++
			}
		}
		v.Fenced = append(v.Fenced, rep.Fenced...)
		v.Unknown = append(v.Unknown, rep.Unknown...)
	}
	dups := 0
	for _, es := range entries {
		if len(es) > 1 {
			dups++
		}
	}

	bs, err := board.Open(boardName, filetxn.WithBackend(r.b))
	if err != nil {
		return nil, err
	}
	bd, err := bs.View(ctx)
	if err != nil {
		return nil, err
	}
	highest := map[string]board.Status{}
	regressed := 0
	for _, rep := range r.reports {
		regressed += rep.Regressed
		for k, st := range rep.Requested {
			if board.Rank(st) > board.Rank(highest[k]) {
				highest[k] = st
			}
		}
	}
	at := 0
	for k, want := range highest {
		if got, ok := bd.Status(k); ok && got == want {
			at++
		}
	}

	ticked, logged, numbered, stray, abandoned, tickCount, err := r.verifyLoop(ctx)
	if err != nil {
		return nil, err
	}

	equal("ledger entries appended, acknowledged", appended, procs*rounds)
	equal("  found on etcd, with their titles", found, appended)
	equal("closures acknowledged, found on etcd", kept, closes)
	equal("stories at the highest status requested", at, len(highest))
	equal("updates lost", (appended-found)+(closes-kept)+(len(highest)-at), 0)
	equal("distinct ids minted", len(minted), appended)
	equal("ids carried by more than one entry", dups, 0)
	equal("advances that answered a lower status", regressed, 0)
	equal("loop ticks acknowledged", ticked, procs*rounds)
	equal("  each logged once, as acknowledged", logged, ticked)
	equal("tick_count, each number logged once", numbered, int(tickCount))
	equal("ticks counted twice or out of order", stray, 0)
	v.Checks = append(v.Checks, check{"  of them abandoned (ticks cut off or fenced)", strconv.Itoa(abandoned), "<= " + strconv.Itoa(len(v.Unknown)+len(v.Fenced)), abandoned <= len(v.Unknown)+len(v.Fenced)})
	v.Checks = append(v.Checks, check{"fenced writes refused (lock.ErrLockLost)", strconv.Itoa(len(v.Fenced)), ">= 1", len(v.Fenced) >= 1})

	var lops []lin.LedgerOp
	var bops []lin.BoardOp
	var tops []lin.TickOp
	for _, rep := range r.reports {
		lops = append(lops, rep.Ledger...)
		bops = append(bops, rep.Board...)
		tops = append(tops, rep.Ticks...)
	}
	if v.Ledger, err = lin.CheckLedger([]byte(seedLedger), lops, linTimeout); err != nil {
		return nil, err
	}
	v.Board = lin.CheckBoard(seedStatuses(), bops, linTimeout)
	v.Ticks = lin.CheckTicks(tops, linTimeout)
	for _, h := range []struct {
		name string
		res  lin.Result
	}{{"ledger", v.Ledger}, {"board", v.Board}, {"tick", v.Ticks}} {
		got := "yes"
		switch {
		case !h.res.Decided:
			got = "undecided"
		case !h.res.Linearizable:
			got = "no"
		}
		v.Checks = append(v.Checks, check{fmt.Sprintf("%s history linearizable (%d ops)", h.name, h.res.Ops), got, "yes", got == "yes"})
	}
	v.OK = v.failed() == 0
	return v, nil
}

// verifyLoop reads the loop back from etcd and returns how many ticks the
// workers were told were counted, how many of those the tick log holds
// once with the same number, runner and start, how many of the numbers 1
// to tick_count the log's counted lines carry once each, how many counted
// lines carry a number outside them or shared with another line, how many
// were abandoned, and tick_count.
func (r *race) verifyLoop(ctx context.Context) (ticked, logged, numbered, stray, abandoned int, count int64, err error) {
	root, err := loopstate.NewRoot(loopRoot, filetxn.WithBackend(r.b))
	if err != nil {
		return 0, 0, 0, 0, 0, 0, err
	}
	l, err := root.Open(ctx, loopName)
	if err != nil {
		return 0, 0, 0, 0, 0, 0, err
	}
	d, err := l.View(ctx)
	if err != nil {
		return 0, 0, 0, 0, 0, 0, err
	}
	recs, err := l.Ticks(ctx)
	if err != nil {
		return 0, 0, 0, 0, 0, 0, err
	}
	lines := map[tickSeen]int{} // the counted lines, by number, runner and start
	byN := map[int64]int{}      // the counted lines, by number
	for _, rec := range recs {
		if rec.Outcome == loopstate.Skipped {
			continue
		}
		if rec.Outcome == loopstate.Abandoned {
			abandoned++
		}
		lines[tickSeen{N: rec.N, PID: rec.PID, Started: rec.StartedAt.UTC()}]++
		byN[rec.N]++
	}
	for n := int64(1); n <= d.TickCount; n++ {
		if byN[n] == 1 {
			numbered++
		}
	}
	for n, k := range byN {
		if n < 1 || n > d.TickCount || k > 1 {
			stray += k
		}
	}
	for _, rep := range r.reports {
		for _, t := range rep.Ticked {
			ticked++
			t.Started = t.Started.UTC()
			if lines[t] == 1 {
				logged++
			}
		}
	}
	return ticked, logged, numbered, stray, abandoned, d.TickCount, nil
}

// print prints the verdict as a table and notes.
func (v *verdict) print(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d hosts (worker processes) x %d rounds on one ledger, one board and one loop, kept on a %d-member etcd cluster\n\n", v.Procs, v.Rounds, members)
	width := len("check")
	for _, c := range v.Checks {
		width = max(width, len(c.Name))
	}
	fmt.Fprintf(&b, "%-*s  %9s  %9s\n", width, "check", "got", "want")
	for _, c := range v.Checks {
		ok := "ok"
		if !c.OK {
			ok = "FAIL"
		}
		fmt.Fprintf(&b, "%-*s  %9s  %9s  %s\n", width, c.Name, c.Got, c.Want, ok)
	}
	b.WriteByte('\n')
	notes := func(label string, lines []string) {
		for i, l := range lines {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(&b, "%-10s  %s\n", label, l)
		}
	}
	notes("faults", v.Faults)
	notes("refused", v.Fenced)
	switch len(v.Unknown) {
	case 0:
		notes("retried", []string{"no write was cut off"})
	default:
		notes("retried", []string{fmt.Sprintf("%d write(s) cut off with their outcome unknown (during the faults), each retried; the first: %s", len(v.Unknown), v.Unknown[0])})
	}
	notes("elapsed", []string{fmt.Sprintf("%s (cluster up %s, race %s, checks %s)", round(v.Elapsed), round(v.Up), round(v.Race), round(v.Check))})
	if v.Dir != "" {
		notes("files", []string{v.Dir + " (etcd/: the members' data and logs; hosts/: each host's directories and stderr)"})
	} else {
		notes("files", []string{"removed, processes ended (give -dir DIR to keep the files)"})
	}
	if v.OK {
		b.WriteString("\nall checks passed: no lost update, no duplicate id, no tick counted twice, the frozen host's write refused, every history linearizable\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
