package etcd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/ledger"
)

// The environment of the fault and linearizability tests' child processes.
const (
	faultEndpointsEnv = "FILETXN_FAULT_ENDPOINTS" // comma-separated client URLs
	faultPrefixEnv    = "FILETXN_FAULT_PREFIX"    // the Backend's prefix
	faultDirEnv       = "FILETXN_FAULT_DIR"       // a directory the processes share
	faultProcEnv      = "FILETXN_FAULT_PROC"      // this child's index
	faultCountEnv     = "FILETXN_FAULT_COUNT"     // how many operations to run
	faultTTLEnv       = "FILETXN_FAULT_TTL"       // the session TTL, a time.Duration
)

// faultWait bounds every wait of the fault tests: generous, for a loaded
// two-core machine running the race detector.
const faultWait = 2 * time.Minute

// A faultEnv is a child's view of its run, read from its environment.
type faultEnv struct {
	endpoints   []string
	prefix, dir string
	proc, count int
	ttl         time.Duration
}

// env returns the environment that gives a child e.
func (e faultEnv) env() []string {
	return []string{
		faultEndpointsEnv + "=" + strings.Join(e.endpoints, ","),
		faultPrefixEnv + "=" + e.prefix,
		faultDirEnv + "=" + e.dir,
		faultProcEnv + "=" + strconv.Itoa(e.proc),
		faultCountEnv + "=" + strconv.Itoa(e.count),
		faultTTLEnv + "=" + e.ttl.String(),
	}
}

// readFaultEnv returns the faultEnv that the parent gave this child.
func readFaultEnv() (faultEnv, error) {
	e := faultEnv{
		endpoints: strings.Split(os.Getenv(faultEndpointsEnv), ","),
		prefix:    os.Getenv(faultPrefixEnv),
		dir:       os.Getenv(faultDirEnv),
	}
	var err error
	if e.proc, err = strconv.Atoi(os.Getenv(faultProcEnv)); err != nil {
		return e, err
	}
	if e.count, err = strconv.Atoi(os.Getenv(faultCountEnv)); err != nil {
		return e, err
	}
	if e.ttl, err = time.ParseDuration(os.Getenv(faultTTLEnv)); err != nil {
		return e, err
	}
	return e, nil
}

// backend returns a client of e's cluster and a Backend on it with e's
// session TTL, and a function that closes both.
func (e faultEnv) backend() (*etcd.Backend, func(), error) {
	cl, err := clientv3.New(clientv3.Config{Endpoints: e.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, err
	}
	b, err := etcd.New(cl, e.prefix, etcd.WithSessionTTL(e.ttl))
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	return b, func() { b.Close(); cl.Close() }, nil
}

// childMain runs fn as a child's body: its faultEnv read, its error printed
// on standard error and turned into exit status 1.
func childMain(name string, fn func(e faultEnv) error) func() int {
	return func() int {
		e, err := readFaultEnv()
		if err == nil {
			err = fn(e)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 1
		}
		return 0
	}
}

// A children is a set of child processes that write JSON records, one a
// line, on their standard output, each into a file of its own.
type children struct {
	t    *testing.T
	cmds []*exec.Cmd
	outs []string
	done []chan error
}

// startChildren starts n children running the function registered as name,
// child i with the environment env(i).
func startChildren(t *testing.T, name string, n int, env func(i int) faultEnv) *children {
	t.Helper()
	cs := &children{t: t}
	dir := t.TempDir()
	for i := range n {
		cmd := etcdtest.Child(t, name, env(i).env()...)
		out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = f
		if err := cmd.Start(); err != nil {
			t.Fatalf("start of child %s %d: %v", name, i, err)
		}
		f.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		cs.cmds, cs.outs, cs.done = append(cs.cmds, cmd), append(cs.outs, out), append(cs.done, done)
	}
	return cs
}

// lines returns how many records the children have written so far.
func (cs *children) lines() int {
	n := 0
	for _, out := range cs.outs {
		data, _ := os.ReadFile(out)
		n += bytes.Count(data, []byte("\n"))
	}
	return n
}

// wait waits for every child to exit, and fails the test unless each
// exited with status 0.
func (cs *children) wait() {
	cs.t.Helper()
	for i, done := range cs.done {
		select {
		case err := <-done:
			if err != nil {
				cs.t.Errorf("child %d (pid %d): %v", i, cs.cmds[i].Process.Pid, err)
			}
		case <-time.After(faultWait):
			cs.t.Fatalf("child %d (pid %d) still running after %v", i, cs.cmds[i].Process.Pid, faultWait)
		}
	}
}

// records decodes every child's records into a slice of R.
func records[R any](t *testing.T, cs *children) [][]R {
	t.Helper()
	all := make([][]R, len(cs.outs))
	for i, out := range cs.outs {
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r R
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("child %d: record %q: %v", i, sc.Text(), err)
			}
			all[i] = append(all[i], r)
		}
		f.Close()
	}
	return all
}

// emit writes r as one JSON line on standard output.
func emit(r any) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(data, '\n'))
	return err
}

// waitUntil polls cond until it holds, failing the test after faultWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(faultWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", faultWait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killLeaderMidway kills the cluster's leader once the children have
// written at least kill records, and restarts it once they have written
// restart (more, through the other members). It returns the member killed.
func killLeaderMidway(t *testing.T, c *etcdtest.Cluster, cs *children, kill, restart int) int {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d records before the kill", kill), func() bool { return cs.lines() >= kill })
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	t.Logf("leader %d killed after %d records", leader, cs.lines())
	waitUntil(t, fmt.Sprintf("%d records before the restart", restart), func() bool { return cs.lines() >= restart })
	c.Restart(leader)
	t.Logf("member %d restarted after %d records", leader, cs.lines())
	return leader
}

// spec is the append of entry seq of appender proc: its origin and
// source_spec identify it, so that a retry whose first try was published
// is skipped (Append returns "" for it) instead of filed twice.
func spec(proc, seq int) ledger.Spec {
	return ledger.Spec{
		Title:      fmt.Sprintf("p%d-%d", proc, seq),
		Origin:     fmt.Sprintf("fault appender %d", proc),
		SourceSpec: fmt.Sprintf("p%d-%d", proc, seq),
		Reason:     "fault test",
	}
}
