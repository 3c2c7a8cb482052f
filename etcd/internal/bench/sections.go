package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/filetxn/filetxn/etcd/internal/cluster"
	"github.com/filetxn/filetxn/internal/benchkit"
)

// A target is a cluster the sections run on.
type target struct {
	name      string // "1 member"
	endpoints []string
	admin     *client // for checks, not counted in any row
}

// runMutate times one durable increment of the counter, each variant
// through its own client, ops in a row, on t.
func runMutate(ctx context.Context, cfg *config, t *target) (*section, error) {
	sec := &section{Key: "mutate-" + t.name, Title: fmt.Sprintf("One durable read-modify-write of a JSON document, %s", t.name)}
	ins := map[*result]*incrementer{}
	defer func() {
		for _, in := range ins {
			in.close()
		}
	}()
	for i, v := range []string{varHand, varFiletxn, varLocked, varSTM} {
		in, err := newIncrementer(ctx, v, t.endpoints)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", sec.Key, v, err)
		}
		r := &result{Row: benchkit.Row{Name: variantNames[v], Ref: i == 0}}
		in.c.keep()
		ins[r] = in
		sec.Rows = append(sec.Rows, r)
	}
	err := sec.Interleave(cfg.rounds, func(r *result) (float64, error) {
		in := ins[r]
		before, err := readCounter(ctx, t.admin.Client, in.key)
		if err != nil {
			return 0, err
		}
		sent := in.c.sent.Load()
		start := time.Now()
		for range cfg.ops {
			if err := in.inc(ctx); err != nil {
				return 0, err
			}
		}
		elapsed := time.Since(start)
		r.requests += in.c.sent.Load() - sent
		r.ops += int64(cfg.ops)
		after, err := readCounter(ctx, t.admin.Client, in.key)
		if err != nil {
			return 0, err
		}
		if after != before+cfg.ops {
			return 0, fmt.Errorf("counter went from %d to %d in %d increments", before, after, cfg.ops)
		}
		return float64(elapsed.Nanoseconds()) / float64(cfg.ops), nil
	})
	if err != nil {
		return nil, err
	}
	sec.Notes = append(sec.Notes, breakdown(sec, ins))
	return sec, nil
}

// breakdown says where each row's time goes: its requests per operation,
// by method, each with its median duration, and the rest (the client's own
// work: the engine, the codec, the retry loop).
func breakdown(sec *section, ins map[*result]*incrementer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Where the time of one operation goes (%s; requests per operation by method, each with the mean and the median duration of one request, over every round; outside requests is the mean time per operation less the mean time in requests: the engine, the codec, the client library):\n", sec.Title)
	for _, r := range sec.Rows {
		took := ins[r].c.kept()
		var methods []string
		for m := range took {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		var parts []string
		var inRequests float64
		for _, m := range methods {
			ds := took[m]
			var sum time.Duration
			ns := make([]float64, len(ds))
			for i, d := range ds {
				ns[i] = float64(d)
				sum += d
			}
			inRequests += float64(sum) / float64(r.ops)
			parts = append(parts, fmt.Sprintf("%.2f %s, mean %s (median %s)", float64(len(ds))/float64(r.ops), m, ms(float64(sum)/float64(len(ds))), ms(benchkit.Median(ns))))
		}
		var mean float64
		for _, v := range r.Values {
			mean += v / float64(len(r.Values))
		}
		fmt.Fprintf(&b, "- %s: %s; outside requests %s of the mean %s\n", r.Name, strings.Join(parts, ", "), ms(mean-inRequests), ms(mean))
	}
	return b.String()
}

func ms(ns float64) string { return fmt.Sprintf("%.2f ms", ns/1e6) }

// childEnv makes the binary a contending process: its spec, as JSON.
const childEnv = "ETCDBENCH_CHILD"

type childSpec struct {
	Variant   string
	Endpoints []string
	Ops       int
	Parent    int
}

// runContend runs cfg.procs processes that each increment the counter
// cfg.contendOps times at once, each variant in turn; a row's value is its
// throughput, from the common start to the last process's report. Every
// fenced row must lose no increment; the unfenced control's losses are
// reported.
func runContend(ctx context.Context, cfg *config, t *target) (*section, error) {
	sec := &section{Key: "contend-" + t.name, Throughput: true,
		Title: fmt.Sprintf("%d processes x %d increments of one document, %s", cfg.procs, cfg.contendOps, t.name)}
	for i, v := range []string{varSTM, varFiletxn, varLocked, varCarried, varHand, varUnfenced} {
		sec.Rows = append(sec.Rows, &result{Row: benchkit.Row{Name: variantNames[v], Ref: i == 0}})
	}
	variant := map[string]string{}
	for v, n := range variantNames {
		variant[n] = v
	}
	var lost []int
	err := sec.Interleave(cfg.rounds, func(r *result) (float64, error) {
		v := variant[r.Name]
		before, err := readCounter(ctx, t.admin.Client, docKey(v))
		if err != nil {
			return 0, err
		}
		took, sent, err := contendRound(cfg, t, v)
		if err != nil {
			return 0, err
		}
		after, err := readCounter(ctx, t.admin.Client, docKey(v))
		if err != nil {
			return 0, err
		}
		want := before + cfg.procs*cfg.contendOps
		switch {
		case v == varUnfenced:
			lost = append(lost, want-after)
		case after != want:
			return 0, fmt.Errorf("lost updates: the counter went from %d to %d, want %d", before, after, want)
		}
		r.requests += sent
		r.ops += int64(cfg.procs * cfg.contendOps)
		return float64(cfg.procs*cfg.contendOps) / took.Seconds(), nil
	})
	if err != nil {
		return nil, err
	}
	if len(lost) > 0 {
		sec.Row(variantNames[varUnfenced]).Note = benchkit.LostNote(lost, cfg.procs*cfg.contendOps)
	}
	return sec, nil
}

// contendRound starts the processes, lets them go at once when all are
// connected, and returns the time from then to the last one's report and
// the requests they sent.
func contendRound(cfg *config, t *target, variant string) (time.Duration, int64, error) {
	spec, err := json.Marshal(childSpec{Variant: variant, Endpoints: t.endpoints, Ops: cfg.contendOps, Parent: os.Getpid()})
	if err != nil {
		return 0, 0, err
	}
	type proc struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr *os.File
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stdin.Close()
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			p.stderr.Close()
			os.Remove(p.stderr.Name())
		}
	}()
	fail := func(p *proc, err error) (time.Duration, int64, error) {
		p.stderr.Seek(0, io.SeekStart)
		tail, _ := io.ReadAll(io.LimitReader(p.stderr, 4096))
		return 0, 0, fmt.Errorf("process %d: %w; its output:\n%s", p.cmd.Process.Pid, err, tail)
	}
	for range cfg.procs {
		cmd, err := cluster.Command()
		if err != nil {
			return 0, 0, err
		}
		cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
		stderr, err := os.CreateTemp(cfg.dir, "child-*.out")
		if err != nil {
			return 0, 0, err
		}
		cmd.Stderr = stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			stderr.Close()
			return 0, 0, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			stderr.Close()
			return 0, 0, err
		}
		if err := cmd.Start(); err != nil {
			stderr.Close()
			return 0, 0, err
		}
		procs = append(procs, &proc{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: stderr})
	}
	for _, p := range procs {
		if line, err := p.stdout.ReadString('\n'); err != nil || line != "ready\n" {
			return fail(p, fmt.Errorf("want ready, got %q (%v)", line, err))
		}
	}
	start := time.Now()
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return fail(p, err)
		}
	}
	var sent int64
	for _, p := range procs {
		line, err := p.stdout.ReadString('\n')
		var n int64
		if err == nil {
			_, err = fmt.Sscanf(line, "done %d\n", &n)
		}
		if err != nil {
			return fail(p, fmt.Errorf("want done, got %q (%v)", line, err))
		}
		sent += n
	}
	took := time.Since(start)
	for _, p := range procs {
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			return fail(p, err)
		}
	}
	procs = nil // waited for; the deferred clean-up has nothing to kill
	return took, sent, nil
}

// contendChild is a contending process: it connects, says "ready", waits
// for "go", increments the counter, and says "done" with the requests it
// sent. It returns the process's exit status.
func contendChild(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench child:", err)
		return 2
	}
	go cluster.WatchParent(spec.Parent)
	if err := child(spec); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench child:", err)
		return 1
	}
	return 0
}

func child(spec childSpec) error {
	ctx, cancel := context.WithTimeout(context.Background(), cluster.Timeout)
	defer cancel()
	in, err := newIncrementer(ctx, spec.Variant, spec.Endpoints)
	if err != nil {
		return err
	}
	defer in.close()
	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil || line != "go\n" {
		return errors.Join(fmt.Errorf("want go, got %q", line), err)
	}
	sent := in.c.sent.Load()
	for range spec.Ops {
		if err := in.inc(ctx); err != nil {
			return err
		}
	}
	fmt.Printf("done %d\n", in.c.sent.Load()-sent)
	return nil
}
