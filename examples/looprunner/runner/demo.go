package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/filetxn/filetxn"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/loopstate"
)

// The demo's project: a BMAD-style output directory with a ledger and a
// board, a root of loops, and a state directory for the sidecar locks.
type project struct {
	Dir    string `json:"dir"`    // the demo's directory
	Ledger string `json:"ledger"` // <dir>/project/_bmad-output/implementation-artifacts/deferred-work.md
	Board  string `json:"board"`  // <dir>/project/_bmad-output/implementation-artifacts/sprint-status.yaml
	Loops  string `json:"loops"`  // <dir>/project/.loops
	State  string `json:"state"`  // the state directory of the sidecar locks
}

// demoLoop is the name of the demo's loop.
const demoLoop = "nightly-triage"

// contended is the seeded open entry that every worker tries to close in
// its first round: exactly one of them may succeed.
const contended = "DW-4"

// tickTokens is the cost in tokens each demo tick reports: the loop's
// lifetime tokens prove that no tick's write was lost.
const tickTokens = 1000

// newProject lays out a project in dir. Its locks live in dir too (the demo
// ignores -state-dir), so that removing dir leaves nothing behind.
func newProject(dir string) project {
	art := filepath.Join(dir, "project", "_bmad-output", "implementation-artifacts")
	return project{
		Dir:    dir,
		Ledger: filepath.Join(art, "deferred-work.md"),
		Board:  filepath.Join(art, "sprint-status.yaml"),
		Loops:  filepath.Join(dir, "project", ".loops"),
		State:  filepath.Join(dir, "state"),
	}
}

// demoStories are the board's story keys: four epics of five stories.
func demoStories() []string {
	slugs := [][]string{
		{"login-form", "password-reset", "session-expiry", "oauth-google", "audit-log"},
		{"digest-email", "digest-schedule", "unsubscribe-link", "bounce-handling", "template-preview"},
		{"csv-export", "pdf-export", "export-queue", "export-retention", "export-permissions"},
		{"search-index", "search-filters", "search-highlight", "saved-searches", "search-analytics"},
	}
	var keys []string
	for e, ss := range slugs {
		for i, s := range ss {
			keys = append(keys, fmt.Sprintf("%d-%d-%s", e+1, i+1, s))
		}
	}
	return keys
}

// demoTargets are the statuses a worker asks a story to move to.
var demoTargets = []board.Status{board.ReadyForDev, board.InProgress, board.Review, board.AwaitingOperator, board.Done}

func seedBoard() []byte {
	var b strings.Builder
	b.WriteString("# generated: 2026-06-01\n# project: acme-notify\n# tracking_system: file-system\n")
	b.WriteString("last_updated: 2026-06-01 09:00:00\n\n")
	b.WriteString("# STATUS DEFINITIONS: backlog -> ready-for-dev -> in-progress -> review -> done\n")
	b.WriteString("development_status:\n")
	epic := ""
	for _, k := range demoStories() {
		if e := k[:strings.IndexByte(k, '-')]; e != epic {
			if epic != "" {
				fmt.Fprintf(&b, "  epic-%s-retrospective: optional\n\n", epic)
			}
			epic = e
			fmt.Fprintf(&b, "  epic-%s: backlog\n", epic)
		}
		fmt.Fprintf(&b, "  %s: backlog\n", k)
	}
	fmt.Fprintf(&b, "  epic-%s-retrospective: optional\n", epic)
	return []byte(b.String())
}

// seedLedger is a deferred-work ledger as a project accumulates one: a
// preamble, a legacy section of bullets, entries open and closed, one with a
// decision, and prose that mentions an id no entry has yet (so the first id
// the workers mint is past it).
const seedLedger = "# Deferred Work\n" +
	"\n" +
	"Findings from code reviews that were real but out of scope for the story\n" +
	"under review. Each is triaged at sprint planning; see DW-11 for the rule on\n" +
	"when an item may be closed without a fix.\n" +
	"\n" +
	"## Deferred from: code review of 1-2-password-reset (2026-05-18)\n" +
	"\n" +
	"- reset tokens are compared with == (timing); low risk behind the rate limit\n" +
	"- the reset email has no plain-text part\n" +
	"\n" +
	"### DW-1: Reset tokens compared in variable time\n" +
	"origin: code review of spec-1-2.md\n" +
	"location: internal/auth/reset.go:88\n" +
	"source_spec: `spec-1-2.md`\n" +
	"severity: low\n" +
	"reason: behind the rate limiter; fix with the auth refactor\n" +
	"status: done 2026-05-29\n" +
	"resolution: constant-time compare landed in 1-5\n" +
	"\n" +
	"### DW-2: Digest email renders badly in Outlook dark mode\n" +
	"origin: code review of spec-2-1.md\n" +
	"location: templates/digest.html\n" +
	"source_spec: `spec-2-1.md`\n" +
	"severity: medium\n" +
	"reason: needs a design decision on the palette\n" +
	"status: open\n" +
	"decision: 2026-06-02 defer — wait for the design system tokens\n" +
	"\n" +
	"### DW-3: Export queue retries forever on a 4xx from storage\n" +
	"origin: code review of spec-3-3.md\n" +
	"location: internal/export/queue.go:140\n" +
	"source_spec: `spec-3-3.md`\n" +
	"severity: high\n" +
	"reason: out of scope for the queue skeleton\n" +
	"status: open\n" +
	"\n" +
	"### DW-4: Session expiry ignores the remember-me flag\n" +
	"origin: code review of spec-1-3.md\n" +
	"location: internal/auth/session.go:52\n" +
	"source_spec: `spec-1-3.md`\n" +
	"severity: medium\n" +
	"reason: the flag's semantics are still being decided\n" +
	"status: open\n" +
	"\n" +
	"### DW-5: Unsubscribe link is not signed\n" +
	"origin: code review of spec-2-3.md\n" +
	"location: n/a\n" +
	"source_spec: `spec-2-3.md`\n" +
	"severity: high\n" +
	"reason: needs the signing key rotation from epic 1\n" +
	"status: done 2026-06-03\n" +
	"resolution: signed with the rotated key\n" +
	"\n" +
	"### DW-6: Search filters lose state on back navigation\n" +
	"origin: code review of spec-4-2.md\n" +
	"location: web/search/filters.ts\n" +
	"source_spec: `spec-4-2.md`\n" +
	"reason: router upgrade pending\n" +
	"status: open\n"

// demoReport is what a worker process prints as its last line.
type demoReport struct {
	Appended     []string                `json:"appended"`     // the ids it minted, one per round
	Closed       []string                `json:"closed"`       // the ids its closes closed
	Requested    map[string]board.Status `json:"requested"`    // story -> highest status it asked for
	Ticks        int                     `json:"ticks"`        // ticks that ran ok
	Regressed    int                     `json:"regressed"`    // advances that answered a status below the one asked for
	Acquisitions int                     `json:"acquisitions"` // locks taken
	Waits        []time.Duration         `json:"waits_ns"`     // the waits of those that found the lock busy
	Unmeasured   int                     `json:"unmeasured"`   // busy acquisitions whose wait could not be read
	Worker       int                     `json:"worker"`       // its index
	Rounds       int                     `json:"rounds"`       // rounds it finished
	Error        string                  `json:"error,omitempty"`
}

// workerLine is one line a worker prints on stdout: a finished round, or its
// report.
type workerLine struct {
	Round  int         `json:"round,omitempty"`
	Report *demoReport `json:"report,omitempty"`
}

// demo is "demo [-procs N] [-n M] [-dir DIR]": it races N worker processes
// of this binary for M rounds on one ledger, one board and one loop, then
// verifies that nothing was lost.
func demo(c *cli, args []string) error {
	fset := c.flagSet("demo")
	procs := fset.Int("procs", 4, "the number `N` of worker processes")
	rounds := fset.Int("n", 50, "`M` rounds per worker (each: append and close a ledger entry, advance a story, tick the loop)")
	dir := fset.String("dir", "", "keep the project in `DIR` (default: a temporary one, removed at the end)")
	worker := fset.Int("worker", -1, "internal: run as worker `I` of a demo")
	if err := c.parseNoArgs(fset, args); err != nil {
		return err
	}
	if *procs < 1 || *rounds < 1 {
		return usagef("-procs and -n must be at least 1")
	}
	if *worker >= 0 {
		if *dir == "" {
			return usagef("a worker needs -dir")
		}
		return demoWorker(c, newProject(*dir), *worker, *rounds)
	}

	keep := *dir != ""
	if keep {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(*dir, "project")); err == nil {
			return refusedf("%s already holds a demo project; give an empty directory", *dir)
		}
	} else {
		tmp, err := os.MkdirTemp("", "looprunner-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	p := newProject(abs)
	if err := p.seed(); err != nil {
		return err
	}
	res, err := race(c, p, *procs, *rounds)
	if err != nil {
		return err
	}
	v, err := verify(p, *procs, *rounds, res)
	if err != nil {
		return err
	}
	v.Elapsed = res.elapsed
	v.Procs, v.Rounds = *procs, *rounds
	if keep {
		v.Files = &p
	}
	if err := c.printVerdict(v); err != nil {
		return err
	}
	if !v.OK {
		return refusedf("%d check(s) failed", v.failed())
	}
	return nil
}

// seed writes the ledger, the board and the loop of a new project.
func (p project) seed() error {
	if err := os.MkdirAll(filepath.Dir(p.Ledger), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p.Ledger, []byte(seedLedger), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(p.Board, seedBoard(), 0o644); err != nil {
		return err
	}
	root, err := loopstate.NewRoot(p.Loops)
	if err != nil {
		return err
	}
	_, err = root.Create(context.Background(), demoLoop, func(d *loopstate.Doc) error {
		d.Template, d.Schedule = "ci-triage", loopstate.Schedule{Enabled: true, Every: "15m"}
		return nil
	})
	return err
}

// raced is what the workers of one race reported.
type raced struct {
	reports []demoReport
	elapsed time.Duration
}

// race starts the workers, releases them together, shows their progress and
// collects their reports.
func race(c *cli, p project, procs, rounds int) (raced, error) {
	exe, err := os.Executable()
	if err != nil {
		return raced{}, err
	}
	type worker struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout io.ReadCloser
		stderr bytes.Buffer
		report *demoReport
	}
	var ws []*worker
	stop := func() { // the workers started so far, which wait at the barrier
		for _, w := range ws {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
	}
	for i := range procs {
		w := &worker{}
		w.cmd = exec.Command(exe, "demo", "-worker", strconv.Itoa(i), "-dir", p.Dir, "-n", strconv.Itoa(rounds))
		w.cmd.Stderr = &w.stderr
		if w.stdin, err = w.cmd.StdinPipe(); err == nil {
			if w.stdout, err = w.cmd.StdoutPipe(); err == nil {
				err = w.cmd.Start()
			}
		}
		if err != nil {
			stop()
			return raced{}, err
		}
		ws = append(ws, w)
	}
	// The barrier: every worker waits for the end of its standard input.
	start := time.Now()
	for _, w := range ws {
		w.stdin.Close()
	}
	rounded := make(chan struct{}, procs)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(w.stdout)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				var l workerLine
				if json.Unmarshal(sc.Bytes(), &l) != nil {
					continue
				}
				if l.Report != nil {
					w.report = l.Report
				} else if l.Round > 0 {
					rounded <- struct{}{}
				}
			}
			io.Copy(io.Discard, w.stdout)
		}()
	}
	go func() { wg.Wait(); close(rounded) }()
	prog := newProgress(c.stderr, procs*rounds, procs)
	for range rounded {
		prog.step()
	}
	var failed []string
	for i, w := range ws {
		if err := w.cmd.Wait(); err != nil || w.report == nil {
			msg := strings.TrimSpace(w.stderr.String())
			if msg == "" && err != nil {
				msg = err.Error()
			}
			failed = append(failed, fmt.Sprintf("worker %d: %s", i, strings.Join(strings.Fields(msg), " ")))
		}
	}
	elapsed := time.Since(start)
	prog.done(elapsed)
	if len(failed) > 0 {
		return raced{}, errors.New(strings.Join(failed, "; "))
	}
	res := raced{elapsed: elapsed}
	for _, w := range ws {
		res.reports = append(res.reports, *w.report)
	}
	return res, nil
}

// progress shows the rounds done on stderr: one line rewritten in place on
// a terminal, else a plain line at every tenth.
type progress struct {
	w            io.Writer
	tty          bool
	total, count int
	procs        int
	start        time.Time
	last         time.Time
	shown        int // tenths already printed (plain lines)
}

func newProgress(w io.Writer, total, procs int) *progress {
	p := &progress{w: w, total: total, procs: procs, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	fmt.Fprintf(w, "demo: %d worker processes, %d rounds in all; each round appends and closes a ledger entry, advances a story and ticks the loop\n", procs, total)
	return p
}

func (p *progress) line() string {
	return fmt.Sprintf("demo: %d/%d rounds, %s", p.count, p.total, roundDuration(time.Since(p.start)))
}

func (p *progress) step() {
	p.count++
	if p.tty {
		if time.Since(p.last) >= 100*time.Millisecond {
			p.last = time.Now()
			fmt.Fprintf(p.w, "\r\033[K%s", p.line())
		}
		return
	}
	if tenth := p.count * 10 / p.total; tenth > p.shown {
		p.shown = tenth
		fmt.Fprintln(p.w, p.line())
	}
}

func (p *progress) done(elapsed time.Duration) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", p.line())
	}
}

// check is one row of the verification table.
type check struct {
	Name string `json:"name"`
	Got  int    `json:"got"`
	Want int    `json:"want"`
	OK   bool   `json:"ok"`
}

// verdict is the demo's result.
type verdict struct {
	Checks       []check       `json:"checks"`
	Acquisitions int           `json:"lock_acquisitions"`
	Waits        int           `json:"lock_waits"`
	Unmeasured   int           `json:"lock_waits_unmeasured"`
	Median       time.Duration `json:"lock_wait_median_ns"`
	Max          time.Duration `json:"lock_wait_max_ns"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	Procs        int           `json:"procs"`
	Rounds       int           `json:"rounds"`
	Files        *project      `json:"files,omitempty"` // nil when the files were removed
	OK           bool          `json:"ok"`
}

func (v verdict) failed() int {
	n := 0
	for _, c := range v.Checks {
		if !c.OK {
			n++
		}
	}
	return n
}

// verify reads the three files back and checks them against what the
// workers reported.
func verify(p project, procs, rounds int, res raced) (verdict, error) {
	ctx := context.Background()
	var v verdict
	add := func(name string, got, want int) {
		v.Checks = append(v.Checks, check{name, got, want, got == want})
	}

	// The ledger: every minted id is in the file with its worker's title,
	// no id is carried twice, and every close is still there.
	ls, err := ledger.Open(p.Ledger, filetxn.WithStateRoot(p.State))
	if err != nil {
		return v, err
	}
	d, err := ls.View(ctx)
	if err != nil {
		return v, err
	}
	entries := map[string][]ledger.Entry{}
	for _, e := range d.Entries() {
		entries[e.ID] = append(entries[e.ID], e)
	}
	minted := map[string]bool{}
	found, closes, kept, contendedWins := 0, 0, 0, 0
	for _, r := range res.reports {
		for round, id := range r.Appended {
			minted[id] = true
			if es := entries[id]; len(es) == 1 && es[0].Title == demoTitle(r.Worker, round) {
				found++
			}
		}
		for _, id := range r.Closed {
			closes++
			if es := entries[id]; len(es) == 1 && es[0].Done() {
				kept++
			}
			if id == contended {
				contendedWins++
			}
		}
	}
	add("ledger entries appended, found in the file", found, procs*rounds)
	add("distinct ids minted", len(minted), procs*rounds)
	add("entries in the ledger, ids all distinct", len(entries), len(d.Entries()))
	add("closures kept", kept, closes)
	add("closures made", closes, procs*(rounds-1)+1)
	add("workers that closed contended "+contended, contendedWins, 1)

	// The board: every story stands exactly at the highest status asked of
	// it (never lower: a lost move; never higher: nobody asked).
	bs, err := board.Open(p.Board, filetxn.WithStateRoot(p.State))
	if err != nil {
		return v, err
	}
	bd, err := bs.View(ctx)
	if err != nil {
		return v, err
	}
	highest := map[string]board.Status{}
	for _, r := range res.reports {
		for k, st := range r.Requested {
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
	regressed := 0
	for _, r := range res.reports {
		regressed += r.Regressed
	}
	add("advances that answered a lower status", regressed, 0)
	add("stories at the highest status requested", at, len(highest))

	// The loop: every tick counted in the state and logged, and every
	// tick's cost added.
	root, err := loopstate.NewRoot(p.Loops)
	if err != nil {
		return v, err
	}
	l, err := root.Open(ctx, demoLoop)
	if err != nil {
		return v, err
	}
	st, err := l.View(ctx)
	if err != nil {
		return v, err
	}
	ticks, err := l.Ticks(ctx)
	if err != nil {
		return v, err
	}
	okTicks, ran := 0, 0
	for _, t := range ticks {
		if t.Outcome == loopstate.OK {
			okTicks++
		}
	}
	for _, r := range res.reports {
		ran += r.Ticks
	}
	add("ticks run by the workers", ran, procs*rounds)
	add("ticks recorded in the state", int(st.TickCount), procs*rounds)
	add("ticks logged ok", okTicks, procs*rounds)
	add("tokens spent (1000 a tick)", int(st.Spent.Tokens), procs*rounds*tickTokens)

	var waits []time.Duration
	for _, r := range res.reports {
		v.Acquisitions += r.Acquisitions
		v.Unmeasured += r.Unmeasured
		waits = append(waits, r.Waits...)
	}
	v.Waits = len(waits) + v.Unmeasured
	if len(waits) > 0 {
		slices.Sort(waits)
		v.Median, v.Max = waits[len(waits)/2], waits[len(waits)-1]
	}
	v.OK = v.failed() == 0
	return v, nil
}

func (c *cli) printVerdict(v verdict) error {
	if c.json {
		return c.printJSON(v)
	}
	c.printf("\n%d worker processes x %d rounds on one ledger, one board and one loop\n\n", v.Procs, v.Rounds)
	width := len("check")
	for _, ch := range v.Checks {
		width = max(width, len(ch.Name))
	}
	c.printf("%-*s  %8s  %8s\n", width, "check", "got", "want")
	for _, ch := range v.Checks {
		ok := "ok"
		if !ch.OK {
			ok = "FAIL"
		}
		c.printf("%-*s  %8d  %8d  %s\n", width, ch.Name, ch.Got, ch.Want, ok)
	}
	waits := fmt.Sprintf("%d of %d acquisitions found the lock busy", v.Waits, v.Acquisitions)
	if v.Waits > 0 {
		waits += fmt.Sprintf("; waited median %s, max %s", roundDuration(v.Median), roundDuration(v.Max))
	}
	c.printf("\nlock waits  %s\n", waits)
	c.printf("elapsed     %s\n", roundDuration(v.Elapsed))
	if v.Files != nil {
		c.printf("files       ledger %s\n            board  %s\n            loop   %s\n            locks  %s\n",
			v.Files.Ledger, v.Files.Board, filepath.Join(v.Files.Loops, loopsDir, demoLoop), filepath.Join(v.Files.State, "locks"))
	} else {
		c.printf("files       removed (give -dir DIR to keep them)\n")
	}
	if v.OK {
		c.printf("\nall checks passed: no lost update, no duplicate id, no regression\n")
	}
	return nil
}

// demoTitle is the title of the entry worker w appends in round r.
func demoTitle(w, r int) string {
	topics := []string{
		"Retry transient SMTP failures", "Paginate the export list", "Cache search facets",
		"Log the reset-token source IP", "Debounce the filter inputs", "Index digest recipients",
	}
	return fmt.Sprintf("%s (demo worker %d, round %d)", topics[(w+r)%len(topics)], w, r)
}
