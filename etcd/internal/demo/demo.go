package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/cluster"
	"github.com/filetxn/filetxn/examples/looprunner/runner"
	"github.com/filetxn/filetxn/loopstate"
)

// Name is the demo's command.
const Name = "etcd-race"

// members is the size of the demo's cluster.
const members = 3

// prefix is the key prefix of the demo's project in its cluster.
const prefix = "demo"

// demoTimeout bounds the whole demo, so that one that went wrong ends.
const demoTimeout = 10 * time.Minute

// Extension returns the extension that adds the command etcd-race to the
// looprunner command line.
func Extension() runner.Extension {
	return runner.Extension{Commands: map[string]map[string]runner.Command{"": {Name: {
		Summary: "the demo on etcd: 4 host processes race on a ledger, a board and a loop kept on a 3-member etcd cluster, through a leader's crash and a frozen host",
		Details: "It starts a 3-member etcd cluster of processes of this binary and -procs\n" +
			"worker processes, each standing for a host (its own temporary and state\n" +
			"directories: no lock file is shared), which for -n rounds each append and\n" +
			"close ledger entries, advance stories, read the ledger and tick a loop,\n" +
			"all on etcd.\n" +
			"Midway it SIGKILLs the cluster's leader and restarts it, then SIGSTOPs a\n" +
			"worker that holds the ledger's lock for longer than its session's lease\n" +
			"(-ttl) and SIGCONTs it. It then checks that nothing was lost, that no id\n" +
			"was minted twice or tick counted twice, that the frozen worker's write\n" +
			"was refused, and that the history of every operation is linearizable,\n" +
			"prints the verdict, and exits 1 if a check failed.\n" +
			"It runs on a cluster of its own: -etcd and the other etcd flags do not apply.\n" +
			"Progress goes to stderr; nothing is left behind unless -dir is given.\n",
		Run: command,
	}}}}
}

// config is one run of the demo.
type config struct {
	procs, rounds int
	ttl           time.Duration
	dir           string        // where to keep everything; "" for a temporary directory, removed
	progress      io.Writer     // where progress goes
	timeout       time.Duration // bounds the whole demo
}

// command is the command etcd-race: the demo, or one of its workers.
func command(x *runner.Cmd, args []string) error {
	fs := x.FlagSet()
	var cfg config
	fs.IntVar(&cfg.procs, "procs", 4, "the number `N` of worker processes, each a host")
	fs.IntVar(&cfg.rounds, "n", 50, "`M` rounds per worker (each: append and close a ledger entry, advance a story, read the ledger, tick the loop)")
	fs.StringVar(&cfg.dir, "dir", "", "keep the cluster's data, logs and the hosts' directories in `DIR` (default: a temporary one, removed at the end)")
	fs.DurationVar(&cfg.ttl, "ttl", 2*time.Second, "the `DURATION` of each worker's session lease (whole seconds)")
	var wa workerArgs
	var endpoints string
	fs.IntVar(&wa.index, "worker", -1, "internal: run as worker `I` of a demo")
	fs.StringVar(&endpoints, "endpoints", "", "internal: the cluster's client `URLS`, for a worker")
	fs.StringVar(&wa.prefix, "prefix", prefix, "internal: the project's key `PREFIX`, for a worker")
	fs.BoolVar(&wa.freeze, "freeze", false, "internal: the worker is the one frozen")
	fs.IntVar(&wa.parent, "parent", 0, "internal: the demo's `PID`, for a worker")
	fs.StringVar(&wa.state, "state", "", "internal: the worker's state `DIR`")
	pos, err := x.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return runner.Usagef("unexpected arguments %q", pos)
	}
	if cfg.procs < 1 || cfg.rounds < 2 || cfg.ttl < time.Second {
		return runner.Usagef("-procs must be at least 1, -n at least 2, -ttl at least 1s")
	}
	if wa.index >= 0 {
		wa.endpoints, wa.ttl, wa.rounds = strings.Split(endpoints, ","), cfg.ttl, cfg.rounds
		return runWorker(wa, os.Stdin, x.Stdout())
	}
	cfg.progress, cfg.timeout = x.Stderr(), demoTimeout
	v, err := play(cfg)
	if err != nil {
		return err
	}
	if x.JSON() {
		err = x.PrintJSON(v)
	} else {
		err = v.print(x.Stdout())
	}
	if err == nil && !v.OK {
		err = runner.Refusedf("%d check(s) failed", v.failed())
	}
	return err
}

// play runs the demo that cfg describes and returns its verdict; an error
// is a demo that could not run to its end (a verdict that fails is not).
func play(cfg config) (*verdict, error) {
	if freezeSignal == nil || !cluster.Supported {
		return nil, fmt.Errorf("%s needs a Unix system (it stops and continues processes): %w", Name, errors.ErrUnsupported)
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	// An interrupt ends the demo as an error does: every process killed,
	// the directory removed.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var mu sync.Mutex // serializes the progress lines of the race and of its faults
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(cfg.progress, Name+": "+format+"\n", args...)
	}

	dir := cfg.dir
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
			return nil, runner.Refusedf("-dir %s: want an empty directory (%v)", dir, err)
		}
	} else {
		tmp, err := os.MkdirTemp("", "looprunner-etcd-race-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}

	say("starting a %d-member etcd cluster, one process each", members)
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o755); err != nil {
		return nil, err
	}
	c, err := cluster.Start(members, cluster.Config{Dir: filepath.Join(dir, "etcd")})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	up := time.Since(begin)
	client, err := cluster.NewClient(c.Endpoints())
	if err != nil {
		return nil, err
	}
	defer client.Close()
	b, err := etcd.New(client, prefix)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if err := seed(ctx, b); err != nil {
		return nil, err
	}
	say("cluster up in %s at %s; ledger, board and loop seeded under the prefix %q", round(up), strings.Join(c.Endpoints(), ","), prefix)

	r := &race{cfg: cfg, dir: dir, c: c, b: b, say: say}
	if err := r.run(ctx); err != nil {
		return nil, err
	}
	checked := time.Now()
	v, err := r.verify(ctx)
	if err != nil {
		return nil, err
	}
	v.Up, v.Race, v.Check = up, r.elapsed, time.Since(checked)
	v.Elapsed = time.Since(begin)
	if cfg.dir != "" {
		v.Dir = dir
	}
	return v, nil
}

// seed writes the demo's ledger and board into etcd, each under its lock,
// and creates its loop there.
func seed(ctx context.Context, b *etcd.Backend) error {
	for _, doc := range []filetxn.Put{{Name: ledgerName, Data: []byte(seedLedger)}, {Name: boardName, Data: seedBoard()}} {
		h, err := b.Lock(ctx, doc.Name, true)
		if err != nil {
			return err
		}
		err = b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{doc}, true)
		if rerr := h.Release(); err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("seeding %s: %w", doc.Name, err)
		}
	}
	root, err := loopstate.NewRoot(loopRoot, filetxn.WithBackend(b))
	if err != nil {
		return err
	}
	if _, err := root.Create(ctx, loopName, nil); err != nil {
		return fmt.Errorf("seeding the loop %s: %w", loopName, err)
	}
	return nil
}

// race is the workers' race and its faults.
type race struct {
	cfg  config
	dir  string
	c    *cluster.Cluster
	b    *etcd.Backend
	say  func(format string, args ...any)
	ws   []*host
	done atomic.Int64 // rounds finished, by every worker

	holding chan int      // a worker says it holds the ledger's lock, frozen
	faults  []string      // what the faults did, for the verdict
	reports []report      // the workers' reports, in worker order
	elapsed time.Duration // from the start line to the last worker's exit
}

// host is one worker process.
type host struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	log    string // its stderr
	report *report
}

// frozen is the worker that the demo stops: the last one.
func (r *race) frozen() int { return r.cfg.procs - 1 }

// run starts the workers, releases them, injects the faults while they
// race and collects their reports. Every worker is dead, and the faults
// are over, when it returns.
func (r *race) run(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	chaos := make(chan error, 1)
	chaosDone := true // until the faults start
	defer func() {
		cancel()
		for _, h := range r.ws { // every worker, even after an error: nothing is left running
			if err != nil {
				h.cmd.Process.Signal(thawSignal)
				h.cmd.Process.Kill()
			}
			h.cmd.Wait()
		}
		if !chaosDone {
			<-chaos // it uses the cluster, which the caller closes next
		}
	}()
	for i := range r.cfg.procs {
		h, err := r.start(i)
		if err != nil {
			return err
		}
		r.ws = append(r.ws, h)
	}
	r.say("%d worker processes (hosts) started; %d rounds each; session TTL %s", r.cfg.procs, r.cfg.rounds, r.cfg.ttl)

	type event struct {
		w    int
		line *workerLine // nil at the end of its output
	}
	events := make(chan event)
	for i, h := range r.ws {
		go func() {
			sc := bufio.NewScanner(h.stdout)
			sc.Buffer(nil, 64<<20)
			for sc.Scan() {
				var l workerLine
				if json.Unmarshal(sc.Bytes(), &l) == nil {
					select {
					case events <- event{i, &l}:
					case <-ctx.Done():
						return
					}
				}
			}
			io.Copy(io.Discard, h.stdout)
			select {
			case events <- event{i, nil}:
			case <-ctx.Done():
			}
		}()
	}
	start := time.Now()
	for _, h := range r.ws {
		if _, err := io.WriteString(h.stdin, cmdStart+"\n"); err != nil {
			return err
		}
	}
	r.holding = make(chan int, 1)
	chaosDone = false
	go func() { chaos <- r.chaos(ctx) }()
	total := r.cfg.procs * r.cfg.rounds
	shown, open := 0, len(r.ws)
	for open > 0 || !chaosDone {
		select {
		case e := <-events:
			switch {
			case e.line == nil:
				open--
			case e.line.Report != nil:
				r.ws[e.w].report = e.line.Report
			case e.line.Holding:
				r.holding <- e.w
			case e.line.Round > 0:
				if n := int(r.done.Add(1)); n*10/total > shown {
					shown = n * 10 / total
					r.say("%d/%d rounds, %s", n, total, round(time.Since(start)))
				}
			}
		case err := <-chaos:
			chaosDone = true
			if err != nil {
				return fmt.Errorf("faults: %w", err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var failed []string
	for i, h := range r.ws {
		if err := h.cmd.Wait(); err != nil || h.report == nil {
			failed = append(failed, fmt.Sprintf("worker %d: %v: %s", i, err, strings.TrimSpace(cluster.LastLines(h.log, 5))))
		}
	}
	r.elapsed = time.Since(start)
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	for _, h := range r.ws {
		r.reports = append(r.reports, *h.report)
	}
	return nil
}

// start starts worker i: a process of this binary, with its own temporary
// and state directories, that dies with the demo.
func (r *race) start(i int) (*host, error) {
	home := filepath.Join(r.dir, "hosts", fmt.Sprintf("host-%d", i))
	tmp, state := filepath.Join(home, "tmp"), filepath.Join(home, "state")
	for _, d := range []string{tmp, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	cmd, err := cluster.Command()
	if err != nil {
		return nil, err
	}
	cmd.Args = append(cmd.Args, Name, "-worker", strconv.Itoa(i),
		"-endpoints", strings.Join(r.c.Endpoints(), ","), "-prefix", prefix,
		"-ttl", r.cfg.ttl.String(), "-n", strconv.Itoa(r.cfg.rounds),
		"-parent", strconv.Itoa(os.Getpid()), "-state", state, "-freeze="+strconv.FormatBool(i == r.frozen()))
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	h := &host{cmd: cmd, log: filepath.Join(home, "stderr.log")}
	logf, err := os.Create(h.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if h.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return h, nil
}

// chaos injects the faults: once a quarter of the rounds are done it
// SIGKILLs the leader and restarts it; then it has the frozen worker hold
// the ledger's lock, SIGSTOPs it until its lease has expired and another
// host has written the ledger, and SIGCONTs it. Every worker waits for the
// freeze before its last round, so that each fault meets a race going on.
func (r *race) chaos(ctx context.Context) error {
	total := int64(r.cfg.procs * r.cfg.rounds)
	if err := until(ctx, func() bool { return r.done.Load() >= total/4 }); err != nil {
		return err
	}
	leader, err := r.c.Leader(ctx)
	if err != nil {
		return err
	}
	at := r.done.Load()
	r.say("SIGKILL the leader, member m%d, after %d/%d rounds", leader, at, total)
	killed := time.Now()
	if err := r.c.Kill(leader); err != nil {
		return err
	}
	next, err := r.c.Leader(ctx)
	if err != nil {
		return err
	}
	elected := time.Since(killed)
	r.say("m%d elected leader %s after the kill", next, round(elected))
	select {
	case <-time.After(time.Until(killed.Add(time.Second))):
	case <-ctx.Done():
		return ctx.Err()
	}
	restarted := time.Now()
	if err := r.c.Restart(leader); err != nil {
		return err
	}
	caught := time.Since(restarted)
	r.say("m%d restarted on its data, caught up in %s", leader, round(caught))
	r.faults = append(r.faults, fmt.Sprintf("SIGKILL of the leader m%d after %d/%d rounds; m%d elected in %s; m%d restarted %s later, caught up in %s",
		leader, at, total, next, round(elected), leader, round(restarted.Sub(killed)), round(caught)))

	for _, h := range r.ws {
		if _, err := io.WriteString(h.stdin, cmdFreeze+"\n"); err != nil {
			return err
		}
	}
	var w int
	select {
	case w = <-r.holding:
	case <-ctx.Done():
		return ctx.Err()
	}
	p := r.ws[w].cmd.Process
	before, err := r.b.Get(ctx, ledgerName)
	if err != nil {
		return err
	}
	if err := p.Signal(freezeSignal); err != nil {
		return err
	}
	stopped := time.Now()
	r.say("SIGSTOP host %d, which holds the ledger's lock (its session's lease: %s)", w, r.cfg.ttl)
	// Nobody else can write the ledger while the lock is held: a change
	// shows that the lease expired and another host took the lock. The
	// worker stays stopped for longer than its lease's TTL in any case.
	passed, past := false, stopped.Add(r.cfg.ttl+500*time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, 4*r.cfg.ttl+5*time.Second)
	err = until(wctx, func() bool {
		if !passed {
			now, err := r.b.Get(wctx, ledgerName)
			passed = err == nil && string(now) != string(before)
		}
		return passed && time.Now().After(past)
	})
	cancel()
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err := p.Signal(thawSignal); err != nil {
		return err
	}
	frozen := time.Since(stopped)
	if _, err := io.WriteString(r.ws[w].stdin, cmdResume+"\n"); err != nil {
		return err
	}
	moved := "another host took the ledger's lock and wrote meanwhile"
	if !passed {
		moved = "no other host wrote the ledger meanwhile"
	}
	r.say("SIGCONT host %d after %s: %s", w, round(frozen), moved)
	r.faults = append(r.faults, fmt.Sprintf("SIGSTOP of host %d inside a ledger Mutate, holding the lock, for %s (session TTL %s): %s; then SIGCONT",
		w, round(frozen), r.cfg.ttl, moved))
	return nil
}

// until waits for cond, checking it every few milliseconds, as long as
// ctx lets it.
func until(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// round rounds d for people: to milliseconds under a second, else to
// tenths of a second.
func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
