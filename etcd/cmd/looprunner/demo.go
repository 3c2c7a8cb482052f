package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/etcd/internal/cluster"
	"github.com/filetxn/filetxn/examples/looprunner/runner"
	"github.com/filetxn/filetxn/ledger"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// cliEnv, set to 1, makes a test binary run the command line (see
// TestMain): the demo runs its commands as processes of the running binary.
const cliEnv = "LOOPRUNNER_TEST_AS_CLI"

// demoStories is how many stories the demo's board has.
const demoStories = 10

// demoOrder is the statuses a demo worker asks a story for.
var demoOrder = []board.Status{board.ReadyForDev, board.InProgress, board.Review, board.Done}

const demoDetails = `The demo makes a project (a ledger of 3 entries, a board of 10 stories),
starts an etcd cluster of -members local processes (unless -etcd names
one: the demo then works under a prefix of its own, deleted at the end),
imports the ledger and the board into etcd and removes the files:
the project has moved. Then -procs workers, at once, each run -n rounds of
'looprunner -etcd ... ledger add' and 'board advance', one process per
command, as on several hosts; halfway through, the cluster's leader is
killed and restarted (with -kill, the default, on a cluster of its own). A
command that fails (the leader gone mid-request) is run again, which is
safe: an add whose entry is in already answers "duplicate", an advance
that is done already changes nothing. Last it exports the ledger and the
board back into files and checks that nothing was lost. It exits 1 if a
check fails, and leaves nothing behind unless given -dir DIR.
`

// demoCommand is "etcd-demo".
func (e *etcdFlags) demoCommand() runner.Command {
	return runner.Command{
		Summary: "race worker processes on a ledger and a board on etcd while its leader is killed, and check that nothing was lost",
		Details: demoDetails,
		Run:     e.demo,
	}
}

// demoRun is one demo: where it runs and how its commands are run.
type demoRun struct {
	dir    string // the working directory of every command
	exe    string
	global []string // the global flags of every command
	out    io.Writer
	cl     *cluster.Cluster // nil: a cluster the demo did not start
}

// cmd runs the command line args as a process of the running binary.
func (d *demoRun) cmd(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, d.exe, append(slices.Clone(d.global), args...)...)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), cliEnv+"=1", "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	var o, eb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &eb
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("looprunner %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(eb.String()))
	}
	return o.String(), eb.String(), err
}

// demoWorker is what one worker saw.
type demoWorker struct {
	ids      []string // the ids its adds printed
	dups     int      // adds that answered duplicate (after a failed try)
	retries  int      // commands run again after a failure
	lower    int      // advances that answered a status below the one asked
	failures []string // commands that failed every try
}

func (e *etcdFlags) demo(c *runner.Cmd, args []string) error {
	fs := c.FlagSet()
	procs := fs.Int("procs", 4, "the number of worker `N`")
	rounds := fs.Int("n", 20, "the rounds `M` of each worker")
	members := fs.Int("members", 3, "the `K` members of the cluster the demo starts")
	kill := fs.Bool("kill", true, "kill the cluster's leader halfway through and restart it")
	keep := fs.String("dir", "", "run in `DIR` and keep the files there (default a temporary directory, removed)")
	if pos, err := c.Parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return runner.Usagef("unexpected arguments %q", pos)
	}
	if *procs < 1 || *rounds < 1 || *members < 1 {
		return runner.Usagef("-procs, -n and -members must be at least 1")
	}
	out := c.Stdout()
	d := &demoRun{out: out}
	var err error
	if d.exe, err = os.Executable(); err != nil {
		return err
	}
	if d.dir = *keep; d.dir == "" {
		if d.dir, err = os.MkdirTemp("", "looprunner-etcd-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(d.dir)
	} else if err := os.MkdirAll(d.dir, 0o777); err != nil {
		return err
	}
	if d.dir, err = filepath.Abs(d.dir); err != nil {
		return err
	}
	eps := e.endpointList()
	if len(eps) == 0 {
		fmt.Fprintf(c.Stderr(), "starting an etcd cluster of %d members...\n", *members)
		cdir := filepath.Join(d.dir, "cluster")
		if err := os.MkdirAll(cdir, 0o777); err != nil {
			return err
		}
		if d.cl, err = cluster.Start(*members, cluster.Config{Dir: cdir}); err != nil {
			return err
		}
		defer d.cl.Close()
		eps = d.cl.Endpoints()
	}
	prefix := fmt.Sprintf("%s-demo-%d-%d", e.prefixKey(), os.Getpid(), time.Now().UnixNano())
	if d.cl == nil {
		// A cluster of the user's: the demo's keys go when it ends.
		defer removePrefix(eps, prefix)
	}
	d.global = []string{"-state-dir", filepath.Join(d.dir, "state"), "-etcd", strings.Join(eps, ","), "-etcd-prefix", prefix}
	ctx := context.Background()

	// The project, on files, then moved to etcd.
	const ledgerFile, boardFile = "project/deferred-work.md", "project/sprint-status.yaml"
	if err := os.MkdirAll(filepath.Join(d.dir, "project"), 0o777); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.dir, boardFile), demoBoard(), 0o666); err != nil {
		return err
	}
	onFiles := &demoRun{dir: d.dir, exe: d.exe, global: []string{"-state-dir", filepath.Join(d.dir, "state")}}
	for i := 1; i <= 3; i++ {
		if _, _, err := onFiles.cmd(ctx, "ledger", "add", "-file", ledgerFile, "-title", fmt.Sprintf("seed %d", i),
			"-origin", fmt.Sprintf("seed-%d", i), "-source-spec", "demo", "-reason", "seeded on files"); err != nil {
			return err
		}
	}
	moved := []struct{ area, file string }{{"ledger", ledgerFile}, {"board", boardFile}}
	for _, m := range moved {
		if _, _, err := d.cmd(ctx, m.area, "import", m.file); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(d.dir, m.file)); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d worker processes x %d rounds on one ledger and one board on etcd (%d endpoints, prefix %s)\n\n", *procs, *rounds, len(eps), prefix)

	// The race.
	start := time.Now()
	var done atomic.Int64
	half := int64(*procs * *rounds / 2)
	killed := make(chan string, 1)
	if *kill && d.cl != nil {
		go func() {
			for done.Load() < half {
				time.Sleep(10 * time.Millisecond)
			}
			killed <- d.killLeader(ctx)
		}()
	} else {
		killed <- "none (-kill=false, or a cluster the demo did not start)"
	}
	want := make(map[string]board.Status) // the highest status asked for each story
	workers := make([]demoWorker, *procs)
	var wg sync.WaitGroup
	for w := range *procs {
		for r := range *rounds {
			key := demoStoryKey((w*7 + r) % demoStories)
			st := demoOrder[(w+r)%len(demoOrder)]
			if board.Rank(st) > board.Rank(want[key]) {
				want[key] = st
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.work(ctx, w, *rounds, &workers[w], &done)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	killNote := <-killed

	// The project moves back to files, and is checked there.
	for _, m := range moved {
		if _, _, err := d.cmd(ctx, m.area, "export", m.file); err != nil {
			return err
		}
	}
	lb, err := os.ReadFile(filepath.Join(d.dir, ledgerFile))
	if err != nil {
		return err
	}
	ld, err := ledger.Parse(lb)
	if err != nil {
		return err
	}
	bb, err := os.ReadFile(filepath.Join(d.dir, boardFile))
	if err != nil {
		return err
	}
	bd, err := board.Parse(bb)
	if err != nil {
		return err
	}
	var appended, dups, retries, lower, failed int
	printed := map[string]bool{}
	for _, w := range workers {
		appended += len(w.ids)
		dups += w.dups
		retries += w.retries
		lower += w.lower
		failed += len(w.failures)
		for _, id := range w.ids {
			printed[id] = true
		}
	}
	titles, ids := map[string]int{}, map[string]bool{}
	inFile := 0
	for _, en := range ld.Entries() {
		titles[en.Title]++
		ids[en.ID] = true
		if printed[en.ID] {
			inFile++
		}
	}
	once := 0
	for w := range *procs {
		for r := range *rounds {
			if titles[demoTitle(w, r)] == 1 {
				once++
			}
		}
	}
	atWant := 0
	for key, st := range want {
		if got, ok := bd.Status(key); ok && got == st {
			atWant++
		}
	}
	total := *procs * *rounds
	checks := []struct {
		what      string
		got, want int
	}{
		{"worker entries in the ledger, each exactly once", once, total},
		{"ids printed by the adds, found in the ledger", inFile, len(printed)},
		{"entries in the ledger, ids all distinct", len(ids), 3 + total},
		{"entries in the ledger", len(ld.Entries()), 3 + total},
		{"commands that failed every try", failed, 0},
		{"advances that answered a lower status", lower, 0},
		{"stories at the highest status asked", atWant, len(want)},
	}
	fmt.Fprintf(out, "%-48s %6s %6s\n", "check", "got", "want")
	ok := true
	for _, ch := range checks {
		verdict := "ok"
		if ch.got != ch.want {
			verdict, ok = "FAILED", false
		}
		fmt.Fprintf(out, "%-48s %6d %6d  %s\n", ch.what, ch.got, ch.want, verdict)
	}
	fmt.Fprintf(out, "\nkilled      %s\n", killNote)
	fmt.Fprintf(out, "run again   %d commands, after a failure; %d adds then found their entry in already\n", retries, dups)
	fmt.Fprintf(out, "elapsed     %s\n", elapsed.Round(100*time.Millisecond))
	if *keep != "" {
		fmt.Fprintf(out, "files       kept in %s (the project exported back into %s)\n", d.dir, filepath.Join(d.dir, "project"))
	} else {
		fmt.Fprintf(out, "files       removed (give -dir DIR to keep them)\n")
	}
	for _, w := range workers {
		for _, f := range w.failures {
			fmt.Fprintf(c.Stderr(), "failed: %s\n", f)
		}
	}
	if !ok {
		return runner.Refusedf("a check failed")
	}
	fmt.Fprintf(out, "\nall checks passed: no lost update, no duplicate id, no regression\n")
	return nil
}

// work runs worker w's rounds.
func (d *demoRun) work(ctx context.Context, w, rounds int, rep *demoWorker, done *atomic.Int64) {
	for r := range rounds {
		out, ok := d.retry(ctx, rep, "ledger", "add", "-file", "project/deferred-work.md", "-title", demoTitle(w, r),
			"-origin", fmt.Sprintf("worker-%d-round-%d", w, r), "-source-spec", "demo", "-reason", "raced on etcd")
		switch {
		case !ok:
		case strings.HasPrefix(out, "duplicate"):
			rep.dups++
		default:
			rep.ids = append(rep.ids, strings.TrimSpace(out))
		}
		st := demoOrder[(w+r)%len(demoOrder)]
		out, ok = d.retry(ctx, rep, "board", "advance", "-file", "project/sprint-status.yaml", demoStoryKey((w*7+r)%demoStories), string(st))
		if ok && board.Rank(board.Status(strings.TrimSpace(out))) < board.Rank(st) {
			rep.lower++
		}
		done.Add(1)
	}
}

// retry runs the command, again after a failure, up to 5 tries, and
// returns its output.
func (d *demoRun) retry(ctx context.Context, rep *demoWorker, args ...string) (string, bool) {
	var err error
	for try := range 5 {
		if try > 0 {
			rep.retries++
			time.Sleep(time.Duration(try) * 200 * time.Millisecond) // a new leader is elected in about a second
		}
		var out string
		if out, _, err = d.cmd(ctx, args...); err == nil {
			return out, true
		}
	}
	rep.failures = append(rep.failures, err.Error())
	return "", false
}

// killLeader kills the cluster's leader, restarts it, and says which.
func (d *demoRun) killLeader(ctx context.Context) string {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	i, err := d.cl.Leader(lctx)
	if err != nil {
		return "none: " + err.Error()
	}
	if err := d.cl.Kill(i); err != nil {
		return "none: " + err.Error()
	}
	if err := d.cl.Restart(i); err != nil {
		return fmt.Sprintf("member %d, the leader (SIGKILL); its restart failed: %v", i, errors.Unwrap(err))
	}
	return fmt.Sprintf("member %d, the leader, by SIGKILL halfway through; restarted", i)
}

func demoTitle(w, r int) string { return fmt.Sprintf("worker %d round %d", w, r) }

func demoStoryKey(i int) string { return fmt.Sprintf("1-%d-story-%d", i+1, i+1) }

// demoBoard returns the demo's board: one epic of demoStories stories in
// the backlog.
func demoBoard() []byte {
	var b strings.Builder
	b.WriteString("# generated by looprunner etcd-demo\nproject: demo\nproject_key: DEMO\n\ndevelopment_status:\n  epic-1: in-progress\n")
	for i := range demoStories {
		fmt.Fprintf(&b, "  %s: backlog\n", demoStoryKey(i))
	}
	b.WriteString("  epic-1-retrospective: optional\n")
	return []byte(b.String())
}

// removePrefix deletes the keys under prefix (every key of the demo's
// documents and locks) from the cluster at eps, bounded by a timeout.
func removePrefix(eps []string, prefix string) {
	client, err := cluster.NewClient(eps)
	if err != nil {
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = client.Delete(ctx, prefix+"/", clientv3.WithPrefix())
}
