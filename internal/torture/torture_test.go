package torture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bin is the looprunner binary the torture drives: built once by TestMain
// (without -race: the kills are the point, and a race-enabled binary is
// several times slower to start), or the one $FILETXN_LOOPRUNNER_BIN names.
var bin string

// multiChildEnv puts the test binary in the part of a worker of the
// multi-file run (multi_unix_test.go), the worker's number its value.
const multiChildEnv = "FILETXN_TORTURE_MULTI_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(multiChildEnv) != "" { // a worker of the multi-file run: it needs no looprunner
		os.Exit(m.Run())
	}
	if bin = os.Getenv("FILETXN_LOOPRUNNER_BIN"); bin != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "filetxn-torture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "looprunner")
	build := exec.Command("go", "build", "-o", bin, "github.com/filetxn/filetxn/examples/looprunner")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building looprunner:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Sizes of the run.
const (
	workers         = 4   // processes running commands at once
	ciKills         = 300 // kills of a run without FILETXN_TORTURE
	killChance      = 0.5 // of a call being killed
	killSpread      = 1.6 // a kill lands within this many times the kind's mean call time
	addsPerLedger   = 250 // entries a ledger gets before the run moves to a fresh one
	storiesPerBoard = 40  // stories of each board, all moved to done before the next board
)

// statuses is the board's order.
var statuses = []string{"backlog", "ready-for-dev", "in-progress", "review", "done"}

// kind is a command the workers run.
type kind int

const (
	add kind = iota
	closeEntry
	archive
	advance
	tick
	kinds
)

var kindNames = [kinds]string{"ledger add", "ledger close", "ledger archive", "board advance", "loop tick"}

// weights of the kinds, in kind order: appends and advances most, an
// archive now and then.
var weights = [kinds]int{4, 3, 1, 4, 3}

// world is the shared files and what the workers were told: the effects
// acknowledged, each recorded only after its command exited 0.
type world struct {
	t     *testing.T
	dir   string // everything lives under it
	state string // -state-dir: the ledgers' and boards' sidecar locks
	loops string // loop -root

	mu       sync.Mutex           // protects the fields below
	ledgers  []string             // each ledger file; the last is the current one
	ids      map[string]string    // acknowledged adds: "<ledger>#<id>" -> title
	open     map[string][]string  // ledger -> acknowledged ids not yet handed to a close
	closed   map[string]bool      // acknowledged closes: "<ledger>#<id>"
	archived map[string]bool      // acknowledged archivings: "<ledger>#<id>"
	adds     int                  // adds acknowledged on the current ledger
	boards   []string             // each board file; the last is the current one
	reached  map[string]int       // "<board>#<key>" -> highest status index acknowledged
	ticks    []int                // acknowledged ticks' numbers
	mean     [kinds]time.Duration // running mean of a kind's unkilled calls
	calls    [kinds]int           // unkilled calls of a kind
	seq      int                  // for unique titles
	locks    map[string]string    // a ledger's or board's lock file
	figures  figures
}

// archiveColumn names the figure betweenArchiveWrites, in the run's report
// and in the README's table.
const archiveColumn = "between an archive's two renames"

// figures are what the run prints.
type figures struct {
	calls, kills, killsHolding, acked int
	killsBy, holdingBy                [kinds]int
	midWrite                          [kinds]int // kills holding the lock with this call's temporary file staged
	betweenArchiveWrites              int        // archive kills between its commit's two renames: the archive's done, the ledger's not
	tempsBeforeFinal                  int
}

// call is one command a worker runs.
type call struct {
	kind  kind
	args  []string
	lock  string                    // the lock file the command takes
	files []string                  // the files it may write, in the order it writes them
	ok    func(stdout string) error // records the effect, called under w.mu after exit 0
	lost  func()                    // undoes the pick, called under w.mu after a kill
}

// TestTortureLosesNothingToKills runs workers that append and close
// ledger entries, archive, advance board stories and tick a loop, all on
// shared files, while about half of their commands are SIGKILLed at a
// random moment between the command's start and well past its usual end;
// the kills that land while the victim holds its lock are counted from the
// holder record at the moment of the kill. Then one last write of every
// file, and the checks: every file parses, every acknowledged effect is in
// the files, no id is there twice, no lock is held, the tick log has one
// line per counted tick, and no temporary file is left.
//
// FILETXN_TORTURE=N runs N kills instead of 300; -v prints the figures,
// among them how many kills landed while the victim held its lock, with a
// temporary file of this call staged (between its write and its rename),
// and between the two renames of an archive's one commit, the archive's
// and then the ledger's, after its commit point. (A kill
// is looked at right after it; a rival that takes the freed lock within
// those microseconds can make the last two figures a little high.)
//
// Ablations (each seen red): without the engine's removal of a dead
// writer's temporary file (removeStale(pf.stale) in fsys's publish)
// the run ends with temps left; without loopstate's recovery of an abandoned tick's line
// (settleAbandoned's recoverTick) the tick log misses lines.
func TestTortureLosesNothingToKills(t *testing.T) {
	target := ciKills
	long := os.Getenv("FILETXN_TORTURE")
	if long != "" {
		n, err := strconv.Atoi(long)
		require.NoError(t, err, "FILETXN_TORTURE=%q: want a number of kills", long)
		target = n
	} else if testing.Short() {
		t.Skip("-short: the torture runs 300 kills (FILETXN_TORTURE=N for more)")
	}
	if runtime.GOOS == "windows" && long == "" {
		t.Skip("on Windows (CI runs it under Wine, which starts a process in tens of milliseconds) only with FILETXN_TORTURE=N")
	}

	w := newWorld(t)
	bound := 4*time.Minute + time.Duration(target)*150*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()

	var kills atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			for kills.Load() < int64(target) && ctx.Err() == nil {
				killed, err := w.runOne(ctx, rng)
				if err != nil {
					errs <- err
					cancel()
					return
				}
				if killed {
					kills.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	require.GreaterOrEqual(t, kills.Load(), int64(target), "kills in %v = %d, want %d", bound, kills.Load(), target)
	elapsed := time.Since(start)

	w.figures.tempsBeforeFinal = len(w.strays())
	w.finalWrites()
	r := w.check()
	f := w.figures
	var by, mid []string
	for k := range kinds {
		by = append(by, fmt.Sprintf("%s %d (%d holding)", kindNames[k], f.killsBy[k], f.holdingBy[k]))
		mid = append(mid, fmt.Sprintf("%s %d", kindNames[k], f.midWrite[k]))
	}
	report := fmt.Sprintf("torture: %d workers, %d commands in %v (%s/%s, %d CPUs)\n"+
		"kills                  %d: %s\n"+
		"kills holding the lock %d: %d with a temporary file staged (%s), %d "+archiveColumn+"\n"+
		"acknowledged effects   %d\n"+
		"lost                   %d\n"+
		"duplicate ids          %d\n"+
		"temps left by kills    %d at the end of the run, %d after the next write of each file\n"+
		"stuck locks            %d\n"+
		"tick log               %d ticks counted, %d lines counted\n",
		workers, f.calls, elapsed.Round(time.Second), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		f.kills, strings.Join(by, ", "), f.killsHolding, sum(f.midWrite), strings.Join(mid, ", "), f.betweenArchiveWrites, f.acked,
		len(r.lost), r.dups, f.tempsBeforeFinal, len(r.strays), len(r.stuck), r.tickCount, r.tickLines)
	t.Log("\n" + report)

	require.Empty(t, r.unparsed, "files that do not parse")
	require.Empty(t, r.lost, "acknowledged effects not in the files")
	require.Zero(t, r.dups, "ids carried twice")
	require.Empty(t, r.stuck, "locks held after every worker is gone")
	require.Empty(t, first(r.strays, 10), "temporary files left after the next write of their file (%d, the first 10 shown)", len(r.strays))
	require.Empty(t, r.tickErrs, "tick log")
	require.Greater(t, f.killsHolding, 0, "kills holding the lock = 0, want some: the kills never landed inside a transaction")
}

func newWorld(t *testing.T) *world {
	dir := t.TempDir()
	w := &world{
		t: t, dir: dir,
		state:    filepath.Join(dir, "state"),
		loops:    filepath.Join(dir, "loops"),
		ids:      map[string]string{},
		open:     map[string][]string{},
		closed:   map[string]bool{},
		archived: map[string]bool{},
		reached:  map[string]int{},
		locks:    map[string]string{},
	}
	require.NoError(t, w.newLedger())
	require.NoError(t, w.newBoard())
	require.NoError(t, os.MkdirAll(w.loops, 0o755))
	res := w.exec(context.Background(), "loop", "create", "-root", w.loops, "t")
	require.Zero(t, res.code, "%s", res)
	return w
}

// newLedger starts a fresh ledger, in a directory of its own (its archive
// is beside it). Called under w.mu, or before the workers start.
func (w *world) newLedger() error {
	d := filepath.Join(w.dir, fmt.Sprintf("ledger-%d", len(w.ledgers)))
	if err := os.Mkdir(d, 0o755); err != nil {
		return err
	}
	p := filepath.Join(d, "deferred-work.md")
	if err := w.askSidecar(p); err != nil {
		return err
	}
	w.ledgers = append(w.ledgers, p)
	w.adds = 0
	return nil
}

// newBoard starts a fresh board of storiesPerBoard stories in backlog,
// and one story, 0-1-final, that only the final writes move.
func (w *world) newBoard() error {
	d := filepath.Join(w.dir, "boards")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# STATUS DEFINITIONS: backlog -> ready-for-dev -> in-progress -> review -> done\n")
	b.WriteString("development_status:\n  epic-0: backlog\n  0-1-final: backlog\n")
	for e := 1; e <= 4; e++ {
		fmt.Fprintf(&b, "  epic-%d: backlog\n", e)
		for s := 1; s <= storiesPerBoard/4; s++ {
			fmt.Fprintf(&b, "  %d-%d-story: backlog\n", e, s)
		}
		fmt.Fprintf(&b, "  epic-%d-retrospective: optional\n", e)
	}
	p := filepath.Join(d, fmt.Sprintf("sprint-status-%d.yaml", len(w.boards)))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := w.askSidecar(p); err != nil {
		return err
	}
	w.boards = append(w.boards, p)
	return nil
}

// sidecar returns the lock file of a ledger or a board, as looprunner
// names it; it is asked once per file, when the file is made.
func (w *world) sidecar(file string) string { return w.locks[file] }

func (w *world) askSidecar(file string) error {
	res := w.exec(context.Background(), "lock", "sidecar", file)
	if res.code != 0 {
		return fmt.Errorf("%s", res)
	}
	w.locks[file] = strings.TrimSpace(res.stdout)
	return nil
}

// pick chooses the next call; it runs under w.mu.
func (w *world) pick(rng *rand.Rand) (call, error) {
	total := 0
	for _, n := range weights {
		total += n
	}
	n := rng.IntN(total)
	k := kind(0)
	for ; n >= weights[k]; k++ {
		n -= weights[k]
	}
	ledger := w.ledgers[len(w.ledgers)-1]
	switch k {
	case closeEntry:
		open := w.open[ledger]
		if len(open) == 0 {
			return w.pickAdd(ledger), nil
		}
		i := rng.IntN(len(open))
		id := open[i]
		w.open[ledger] = slices.Delete(open, i, i+1)
		return call{kind: k, lock: w.sidecar(ledger), files: []string{ledger},
			args: []string{"ledger", "close", "-file", ledger, "-date", "2026-06-11", "-note", "closed under fire", id},
			ok:   func(string) error { w.closed[ledger+"#"+id] = true; return nil },
			lost: func() { w.open[ledger] = append(w.open[ledger], id) }, // maybe closed; a replay is a no-op
		}, nil
	case archive:
		if w.adds == 0 { // the ledger may not exist yet: archive would say so
			return w.pickAdd(ledger), nil
		}
		return call{kind: k, lock: w.sidecar(ledger),
			files: []string{ledger, filepath.Join(filepath.Dir(ledger), "deferred-work-archive.md")},
			args:  []string{"ledger", "archive", "-file", ledger, "-stamp", "2026-06-12"},
			ok: func(out string) error {
				if strings.HasPrefix(out, "archived ") {
					for _, id := range idPattern.FindAllString(strings.SplitN(out, " into ", 2)[0], -1) {
						w.archived[ledger+"#"+id] = true
					}
				}
				return nil
			},
		}, nil
	case advance:
		board := w.boards[len(w.boards)-1]
		var todo []string
		for e := 1; e <= 4; e++ {
			for s := 1; s <= storiesPerBoard/4; s++ {
				if key := fmt.Sprintf("%d-%d-story", e, s); w.reached[board+"#"+key] < len(statuses)-1 {
					todo = append(todo, key)
				}
			}
		}
		if len(todo) == 0 {
			if err := w.newBoard(); err != nil {
				return call{}, err
			}
			return w.pick(rng)
		}
		key := todo[rng.IntN(len(todo))]
		to := statuses[w.reached[board+"#"+key]+1]
		return call{kind: k, lock: w.sidecar(board), files: []string{board},
			args: []string{"board", "advance", "-file", board, key, to},
			ok: func(out string) error {
				got := slices.Index(statuses, strings.TrimSpace(out))
				if got < 0 {
					return fmt.Errorf("board advance %s %s printed %q, want a status", key, to, out)
				}
				w.reached[board+"#"+key] = max(w.reached[board+"#"+key], got)
				return nil
			},
		}, nil
	case tick:
		return call{kind: k, lock: filepath.Join(w.loops, "loops", "t", ".state.lock"),
			files: []string{filepath.Join(w.loops, "loops", "t", ".state.loop")},
			args:  []string{"-json", "loop", "tick", "-root", w.loops, "t", "--", "true"},
			ok: func(out string) error {
				var rec struct{ N int }
				if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.N == 0 {
					return fmt.Errorf("loop tick -json printed %q, want a record (%v)", out, err)
				}
				w.ticks = append(w.ticks, rec.N)
				return nil
			},
		}, nil
	}
	return w.pickAdd(ledger), nil
}

func (w *world) pickAdd(ledger string) call {
	w.seq++
	title := fmt.Sprintf("Finding %d under fire", w.seq)
	return call{kind: add, lock: w.sidecar(ledger), files: []string{ledger},
		args: []string{"ledger", "add", "-file", ledger, "-title", title,
			"-origin", fmt.Sprintf("torture %d", w.seq), "-source-spec", "torture.md", "-reason", "out of scope"},
		ok: func(out string) error {
			id := strings.TrimSpace(out)
			if !regexp.MustCompile(`^DW-\d+$`).MatchString(id) {
				return fmt.Errorf("ledger add printed %q, want an id", out)
			}
			w.ids[ledger+"#"+id] = title
			w.open[ledger] = append(w.open[ledger], id)
			if ledger == w.ledgers[len(w.ledgers)-1] {
				if w.adds++; w.adds >= addsPerLedger {
					return w.newLedger()
				}
			}
			return nil
		},
	}
}

var idPattern = regexp.MustCompile(`DW-\d+`)

// runOne picks a call, runs it, kills it or not, and records the outcome.
// It reports whether the call was killed; an error is a command that
// failed on its own.
func (w *world) runOne(ctx context.Context, rng *rand.Rand) (bool, error) {
	w.mu.Lock()
	c, err := w.pick(rng)
	if err != nil {
		w.mu.Unlock()
		return false, err
	}
	var delay time.Duration = -1
	if w.calls[c.kind] >= 3 && rng.Float64() < killChance {
		delay = time.Duration(rng.Float64() * killSpread * float64(w.mean[c.kind]))
	}
	w.mu.Unlock()

	res, at := w.run(ctx, c.args, delay, c.lock, c.files)
	w.mu.Lock()
	defer w.mu.Unlock()
	if res.aborted {
		return false, nil
	}
	w.figures.calls++
	if res.killed {
		w.figures.kills++
		w.figures.killsBy[c.kind]++
		if at.holding {
			w.figures.killsHolding++
			w.figures.holdingBy[c.kind]++
		}
		if at.holding && at.midWrite {
			w.figures.midWrite[c.kind]++
		}
		if at.holding && c.kind == archive && at.written[1] && !at.written[0] {
			w.figures.betweenArchiveWrites++
		}
		if c.lost != nil {
			c.lost()
		}
		return true, nil
	}
	if res.code != 0 {
		return false, fmt.Errorf("a command failed on its own: %s", res)
	}
	w.calls[c.kind]++
	w.mean[c.kind] += (res.took - w.mean[c.kind]) / time.Duration(min(w.calls[c.kind], 50))
	w.figures.acked++
	return false, c.ok(res.stdout)
}

// result is one command's run.
type result struct {
	args           []string
	stdout, stderr string
	code           int
	killed         bool
	aborted        bool // stopped because the run is stopping
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("looprunner %s: exit %d (killed %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.killed, r.stdout, r.stderr)
}

// callTimeout bounds a command, so that a hang fails the run.
const callTimeout = time.Minute

func (w *world) exec(ctx context.Context, args ...string) result {
	r, _ := w.run(ctx, args, -1, "", nil)
	return r
}

// run runs looprunner with args. With delay >= 0 it SIGKILLs the process
// delay after its start, unless it has exited, and reports whether the
// holder record of lockFile named the victim right after the kill: the
// record is written after the lock is taken and cleared before it is
// released, so then the victim died holding it.
func (w *world) run(ctx context.Context, args []string, delay time.Duration, lockFile string, files []string) (result, killedAt) {
	args = append([]string{"-state-dir", w.state}, args...)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = w.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := result{args: args}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.code, r.stderr = -1, err.Error()
		return r, killedAt{}
	}
	var mu sync.Mutex // protects exited, sent and at
	exited, sent := false, false
	var at killedAt
	if delay >= 0 {
		timer := time.AfterFunc(delay, func() {
			mu.Lock()
			defer mu.Unlock()
			if exited {
				return
			}
			if cmd.Process.Kill() == nil {
				sent = true
				at = seen(lockFile, cmd.Process.Pid, files, start)
			}
		})
		defer timer.Stop()
	}
	err := cmd.Wait()
	mu.Lock()
	exited = true
	killSent := sent
	mu.Unlock()
	r.took = time.Since(start)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		// Windows has no signals: a killed process exits 1 there.
		ws, _ := ee.Sys().(syscall.WaitStatus)
		r.killed = killSent && ctx.Err() == nil && (ws.Signaled() || runtime.GOOS == "windows" && r.code == 1)
	default:
		r.code, r.stderr = -1, err.Error()
	}
	switch {
	case parent.Err() != nil:
		r.aborted = true // the run is being stopped: not this command's fault
	case ctx.Err() != nil:
		r.code, r.stderr = -1, fmt.Sprintf("timed out after %v\n%s", callTimeout, r.stderr)
	}
	if !r.killed {
		at = killedAt{}
	}
	return r, at
}

// killedAt is what a kill found.
type killedAt struct {
	holding  bool   // the victim held the lock
	midWrite bool   // a temporary file of one of its files, made since the call began, was there
	written  []bool // which of its files it had replaced since the call began
}

// seen looks, right after a kill, at the holder record of lockFile and at
// files and their temporary files (of the engine's naming) for what the
// victim pid had done since start. The record is written after the lock is
// taken and cleared before it is released, so a record naming the victim
// says it died holding the lock, when only it could stage a file.
func seen(lockFile string, pid int, files []string, start time.Time) killedAt {
	at := killedAt{holding: holderIs(lockFile, pid), written: make([]bool, len(files))}
	for i, f := range files {
		if fi, err := os.Stat(f); err == nil && !fi.ModTime().Before(start) {
			at.written[i] = true
		}
		dir, base := filepath.Split(f)
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			// The engine's temporary names: "." + base + "." + 16 hex
			// digits + "-0.tmp" or "-1.tmp" (internal/fsys).
			rest, ok := strings.CutPrefix(e.Name(), "."+base+".")
			if !ok || len(rest) != len("0123456789abcdef-0.tmp") || !strings.HasSuffix(rest, ".tmp") {
				continue
			}
			if fi, err := e.Info(); err == nil && !fi.ModTime().Before(start) {
				at.midWrite = true
			}
		}
	}
	return at
}

// holderIs reports whether the holder record in the lock file names pid.
// The record is one line of JSON from offset 1 (package lock's layout).
func holderIs(lockFile string, pid int) bool {
	f, err := os.Open(lockFile)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 1) // byte 0 is the one Windows locks
	line, _, _ := bytes.Cut(b[:n], []byte("\n"))
	var h struct{ PID int }
	return json.Unmarshal(line, &h) == nil && h.PID == pid
}

// finalWrites writes every file once more, with no kill: an add, a close
// and an archive on each ledger, an advance of 0-1-final on each board, and
// a tick. A write of a file removes the temporary files dead writers left
// for it; the tick settles a tick whose runner was killed.
func (w *world) finalWrites() {
	ctx := context.Background()
	for _, ledger := range w.ledgers {
		res := w.exec(ctx, "ledger", "add", "-file", ledger, "-title", "Final", "-origin", "final", "-source-spec", "final.md", "-reason", "last write")
		require.Zero(w.t, res.code, "%s", res)
		id := strings.TrimSpace(res.stdout)
		res = w.exec(ctx, "ledger", "close", "-file", ledger, "-date", "2026-06-13", "-note", "final", id)
		require.Zero(w.t, res.code, "%s", res)
		res = w.exec(ctx, "ledger", "archive", "-file", ledger, "-stamp", "2026-06-13")
		require.Zero(w.t, res.code, "%s", res)
	}
	for _, board := range w.boards {
		res := w.exec(ctx, "board", "advance", "-file", board, "0-1-final", "done")
		require.Zero(w.t, res.code, "%s", res)
	}
	res := w.exec(ctx, "-json", "loop", "tick", "-root", w.loops, "t", "--", "true")
	require.Zero(w.t, res.code, "%s", res)
}

// report is what the checks found.
type report struct {
	unparsed  []string // files that did not parse, with the command's output
	lost      []string // acknowledged effects not found
	dups      int      // ids carried by two entries of one file, or archived twice
	stuck     []string // lock files held
	strays    []string // files of no name the stores use
	tickErrs  []string // what is wrong with the tick log
	tickCount int      // the loop's tick_count
	tickLines int      // counted lines of the tick log
}

type entry struct {
	ID, Title, State string
}

func (w *world) list(file string, r *report) ([]entry, bool) {
	res := w.exec(context.Background(), "-json", "ledger", "list", "-file", file, "-status", "all")
	var es []entry
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &es) != nil {
		r.unparsed = append(r.unparsed, res.String())
		return nil, false
	}
	return es, true
}

func (w *world) check() report {
	var r report
	ctx := context.Background()
	for _, ledger := range w.ledgers {
		es, ok := w.list(ledger, &r)
		if !ok {
			continue
		}
		byID := map[string]entry{}
		for _, e := range es {
			if _, dup := byID[e.ID]; dup {
				r.dups++
			}
			byID[e.ID] = e
		}
		arch := map[string]bool{}
		if ap := filepath.Join(filepath.Dir(ledger), "deferred-work-archive.md"); exists(ap) {
			aes, ok := w.list(ap, &r)
			for _, e := range aes {
				if arch[e.ID] {
					r.dups++
				}
				arch[e.ID] = true
			}
			_ = ok
		}
		for key, title := range w.ids {
			l, id, _ := strings.Cut(key, "#")
			if l != ledger {
				continue
			}
			switch e, ok := byID[id]; {
			case !ok:
				r.lost = append(r.lost, fmt.Sprintf("%s: acknowledged %s (%q) is not in the ledger", ledger, id, title))
			case e.Title != title:
				r.lost = append(r.lost, fmt.Sprintf("%s: acknowledged %s is titled %q, want %q", ledger, id, e.Title, title))
			}
		}
		for key := range w.closed {
			if l, id, _ := strings.Cut(key, "#"); l == ledger && byID[id].State != "done" {
				r.lost = append(r.lost, fmt.Sprintf("%s: acknowledged close of %s, but it is %q", ledger, id, byID[id].State))
			}
		}
		for key := range w.archived {
			if l, id, _ := strings.Cut(key, "#"); l == ledger && !arch[id] {
				r.lost = append(r.lost, fmt.Sprintf("%s: acknowledged archiving of %s, but the archive lacks it", ledger, id))
			}
		}
	}
	for _, board := range w.boards {
		res := w.exec(ctx, "-json", "board", "show", "-file", board)
		var show struct{ Stories map[string]string }
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), &show) != nil {
			r.unparsed = append(r.unparsed, res.String())
			continue
		}
		for key, want := range w.reached {
			b, k, _ := strings.Cut(key, "#")
			if b == board && slices.Index(statuses, show.Stories[k]) < want {
				r.lost = append(r.lost, fmt.Sprintf("%s: %s acknowledged at %s, now %q", board, k, statuses[want], show.Stories[k]))
			}
		}
	}
	w.checkTicks(&r)

	locks, _ := filepath.Glob(filepath.Join(w.state, "locks", "*"))
	locks = append(locks, filepath.Join(w.loops, "loops", "t", ".state.lock"))
	for _, l := range locks {
		res := w.exec(ctx, "-json", "lock", "holder", l)
		var h struct{ Held bool }
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), &h) != nil || h.Held {
			r.stuck = append(r.stuck, res.String())
		}
	}
	r.strays = w.strays()
	return r
}

// checkTicks checks the loop's state against its tick log: one counted
// line (outcome other than skipped) per tick counted, numbered 1 to
// tick_count, and every acknowledged tick logged ok.
func (w *world) checkTicks(r *report) {
	res := w.exec(context.Background(), "-json", "loop", "show", "-root", w.loops, "t")
	var st struct {
		TickCount   int             `json:"tick_count"`
		CurrentTick json.RawMessage `json:"current_tick"`
	}
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &st) != nil {
		r.unparsed = append(r.unparsed, res.String())
		return
	}
	r.tickCount = st.TickCount
	if s := string(st.CurrentTick); s != "" && s != "null" {
		r.tickErrs = append(r.tickErrs, "current_tick after the final tick: "+s)
	}
	f, err := os.Open(filepath.Join(w.loops, "loops", "t", "ticks.jsonl"))
	if err != nil {
		r.tickErrs = append(r.tickErrs, err.Error())
		return
	}
	defer f.Close()
	seen := map[int]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			N       int
			Outcome string
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			r.tickErrs = append(r.tickErrs, fmt.Sprintf("line %d does not parse: %q", line, sc.Text()))
			continue
		}
		if rec.Outcome == "skipped" {
			continue
		}
		r.tickLines++
		if prev, dup := seen[rec.N]; dup {
			r.tickErrs = append(r.tickErrs, fmt.Sprintf("tick %d logged twice (%s, then %s at line %d)", rec.N, prev, rec.Outcome, line))
		}
		seen[rec.N] = rec.Outcome
	}
	if err := sc.Err(); err != nil {
		r.tickErrs = append(r.tickErrs, err.Error())
	}
	for n := 1; n <= st.TickCount; n++ {
		if _, ok := seen[n]; !ok {
			r.tickErrs = append(r.tickErrs, fmt.Sprintf("tick %d of %d counted, but has no line", n, st.TickCount))
		}
	}
	if r.tickLines != st.TickCount {
		r.tickErrs = append(r.tickErrs, fmt.Sprintf("%d counted lines for tick_count %d", r.tickLines, st.TickCount))
	}
	for _, n := range w.ticks {
		if seen[n] != "ok" {
			r.lost = append(r.lost, fmt.Sprintf("acknowledged tick %d is logged %q, want ok", n, seen[n]))
		}
	}
}

// strays lists every file under the run's directory that is none of the
// files the stores keep: temporary files left by killed writers.
func (w *world) strays() []string {
	known := map[string]bool{
		"deferred-work.md": true, "deferred-work-archive.md": true,
		".state.loop": true, ".state.lock": true, "ticks.jsonl": true,
	}
	var out []string
	filepath.WalkDir(w.dir, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			out = append(out, err.Error())
		case d.IsDir():
		case known[d.Name()],
			strings.HasPrefix(d.Name(), "sprint-status-") && strings.HasSuffix(d.Name(), ".yaml"),
			filepath.Base(filepath.Dir(p)) == "locks" && strings.HasSuffix(d.Name(), ".lock"):
		default:
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// first returns the first n of s, for a readable failure.
func first(s []string, n int) []string { return s[:min(n, len(s))] }

func sum(a [kinds]int) int {
	n := 0
	for _, v := range a {
		n += v
	}
	return n
}
