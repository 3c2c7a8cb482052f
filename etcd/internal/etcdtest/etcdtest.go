package etcdtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Timeout bounds every wait of the harness: a member that takes longer to
// come up or to go down fails the test rather than hang it.
const Timeout = 2 * time.Minute

// The environment variables that make the test binary a member or a child.
const (
	memberEnv = "ETCDTEST_MEMBER" // a member's spec, as JSON
	childEnv  = "ETCDTEST_CHILD"  // the name of a registered function
)

// Main runs the tests of a test binary that uses the harness; call it from
// TestMain (after any [Register]). In a process that the harness started
// as a member or a child it runs that instead and exits; otherwise it runs
// the tests and exits with their status. It never returns.
func Main(m *testing.M) {
	if spec := os.Getenv(memberEnv); spec != "" {
		os.Exit(runMember(spec))
	}
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(runChild(name))
	}
	os.Exit(m.Run())
}

// An Option tunes the cluster that [Start] makes.
type Option func(*config)

type config struct {
	dirs     map[int]string
	tick     time.Duration
	election time.Duration
	segment  int64
}

// WithDataDir puts the data directory of member i in dir (which need not
// exist; etcd makes it) instead of under the test's temporary directory.
// The harness does not remove it.
func WithDataDir(i int, dir string) Option {
	return func(c *config) { c.dirs[i] = dir }
}

// WithTimeouts sets the members' heartbeat interval and election timeout,
// which etcd wants at least five heartbeats long. The defaults are short,
// for a quick start and a quick election after a leader dies.
func WithTimeouts(heartbeat, election time.Duration) Option {
	return func(c *config) { c.tick, c.election = heartbeat, election }
}

// WithWALSegment sets the size of each write-ahead log segment, which etcd
// allocates in full when it opens one. The default is small, to spare the
// disk; a member meant to run out of space wants it smaller still.
func WithWALSegment(size int64) Option {
	return func(c *config) { c.segment = size }
}

// A Cluster is an etcd cluster started by [Start], each member a process of
// its own. Its methods are for the test's goroutine: they fail the test
// through the t given to Start.
type Cluster struct {
	t       testing.TB
	logs    string // the directory of the members' logs
	members []*member
	admin   *clientv3.Client // to every member, for Leader and the waits
}

// A member is one process of the cluster, over its lives.
type member struct {
	spec   memberSpec
	stderr string        // the path of its processes' output
	cmd    *exec.Cmd     // the current process; nil before the first start
	done   chan struct{} // closed when cmd has exited
	err    error         // cmd's exit, once done is closed
}

// memberSpec is what a member process is told, through memberEnv.
type memberSpec struct {
	Name, Dir, Log          string
	PeerURL, ClientURL      string
	InitialCluster, Token   string
	TickMs, ElectionMs      uint
	SegmentSize             int64
	Parent                  int // the pid of the test binary, to outlive it not
	ClusterState            string
	SnapshotCount, CatchUps uint64
}

// Start starts an n-member cluster and returns once every member answers a
// linearizable read, or fails t (after at most [Timeout]). When the test
// ends (t.Cleanup) every member process is killed. On a system the harness
// does not support it skips the test.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if !supported {
		t.Skip("etcdtest: a cluster of processes needs a Unix system")
	}
	if n < 1 {
		t.Fatalf("etcdtest: Start(%d members): want at least one", n)
	}
	cfg := config{
		dirs:     map[int]string{},
		tick:     50 * time.Millisecond,
		election: 500 * time.Millisecond,
		segment:  1 << 20,
	}
	for _, o := range opts {
		o(&cfg)
	}
	ports := freePorts(t, 2*n)
	tmp := t.TempDir()
	c := &Cluster{t: t, logs: tmp}
	var initial []string
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		dir := cfg.dirs[i]
		if dir == "" {
			dir = filepath.Join(tmp, name)
		}
		m := &member{
			spec: memberSpec{
				Name:          name,
				Dir:           dir,
				Log:           filepath.Join(tmp, name+".log"),
				PeerURL:       fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
				ClientURL:     fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
				Token:         fmt.Sprintf("etcdtest-%d", os.Getpid()),
				TickMs:        uint(cfg.tick / time.Millisecond),
				ElectionMs:    uint(cfg.election / time.Millisecond),
				SegmentSize:   cfg.segment,
				Parent:        os.Getpid(),
				ClusterState:  "new",
				SnapshotCount: 1000,
				CatchUps:      100,
			},
			stderr: filepath.Join(tmp, name+".out"),
		}
		initial = append(initial, name+"="+m.spec.PeerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.spec.InitialCluster = strings.Join(initial, ",")
	}
	t.Cleanup(c.cleanup)
	for i := range c.members {
		c.start(i)
	}
	admin, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcdtest: client of %v: %v", c.Endpoints(), err)
	}
	c.admin = admin
	for i := range c.members {
		c.waitReady(i)
	}
	return c
}

// freePorts returns n distinct TCP ports of 127.0.0.1 that were free a
// moment ago: all held open together, so that none is chosen twice.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("etcdtest: a free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// start starts a process for member i.
func (c *Cluster) start(i int) {
	c.t.Helper()
	m := c.members[i]
	spec, err := json.Marshal(m.spec)
	if err != nil {
		c.t.Fatalf("etcdtest: member %d: %v", i, err)
	}
	out, err := os.OpenFile(m.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatalf("etcdtest: member %d: %v", i, err)
	}
	defer out.Close()
	cmd, err := command()
	if err != nil {
		c.t.Fatalf("etcdtest: member %d: %v", i, err)
	}
	cmd.Env = append(os.Environ(), memberEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("etcdtest: member %d: %v", i, err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		m.err = cmd.Wait()
		close(done)
	}(m.done)
}

// command returns a command that runs the test binary again, with no
// arguments: Main in the new process decides what it is from its
// environment.
func command() (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.SysProcAttr = sysProcAttr()
	return cmd, nil
}

// running reports whether member i has a process that has not exited.
func (m *member) running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// waitReady waits until member i answers a linearizable read, which it can
// only do once it is part of a cluster with a leader and has caught up.
func (c *Cluster) waitReady(i int) {
	c.t.Helper()
	m := c.members[i]
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{m.spec.ClientURL},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		c.t.Fatalf("etcdtest: client of member %d: %v", i, err)
	}
	defer cli.Close()
	deadline := time.Now().Add(Timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = cli.Get(ctx, "etcdtest-ready")
		cancel()
		if err == nil {
			return
		}
		select {
		case <-m.done:
			c.t.Fatalf("etcdtest: member %d exited while starting: %v\n%s", i, m.err, c.tail(i))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcdtest: member %d not ready after %v: %v\n%s", i, Timeout, err, c.tail(i))
		}
	}
}

// Endpoints returns the client URLs of every member, dead or alive, in
// member order.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.spec.ClientURL
	}
	return eps
}

// Client returns a client of every member's endpoint, which fails over
// from a dead member to another on its own. It is closed when t's test
// ends; it logs nothing.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcdtest: client of %v: %v", c.Endpoints(), err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Kill kills member i with SIGKILL and waits for its process to exit. A
// member already dead is left as it is.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	m := c.members[i]
	if !m.running() {
		return
	}
	_ = m.cmd.Process.Kill()
	select {
	case <-m.done:
	case <-time.After(Timeout):
		c.t.Fatalf("etcdtest: member %d (pid %d) still running %v after SIGKILL", i, m.cmd.Process.Pid, Timeout)
	}
}

// Restart starts member i again, on its data directory and ports, and
// waits until it answers a linearizable read: it has rejoined the cluster
// and caught up with its leader. It fails the test if the member is still
// running (Kill it first).
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.members[i].running() {
		c.t.Fatalf("etcdtest: Restart(%d): member is running; Kill it first", i)
	}
	c.start(i)
	c.waitReady(i)
}

// Running reports whether member i's process is running: it has not been
// killed, nor exited by itself (as a member whose disk is full may).
func (c *Cluster) Running(i int) bool { return c.members[i].running() }

// Leader returns the index of the member that is leader, waiting for one
// to be elected as long as ctx lets it. Only a member that says it is
// leader counts, so the answer is one member's word at one moment: a
// leader can be deposed right after.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for {
		var errs []error
		for i, m := range c.members {
			if !m.running() {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := c.admin.Status(sctx, m.spec.ClientURL)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("member %d: %w", i, err))
				continue
			}
			if st.Leader != 0 && st.Leader == st.Header.MemberId {
				return i, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("etcdtest: no leader: %w", errors.Join(append(errs, ctx.Err())...))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cleanup kills every member and logs their output if the test failed.
func (c *Cluster) cleanup() {
	if c.admin != nil {
		c.admin.Close()
	}
	for i := range c.members {
		c.Kill(i)
	}
	if c.t.Failed() {
		for i := range c.members {
			c.t.Logf("etcdtest: member %d:\n%s", i, c.tail(i))
		}
	}
}

// tail returns the last lines of member i's output and etcd log.
func (c *Cluster) tail(i int) string {
	m := c.members[i]
	return fmt.Sprintf("--- output (%s):\n%s--- etcd log (%s):\n%s",
		m.stderr, lastLines(m.stderr, 20), m.spec.Log, lastLines(m.spec.Log, 20))
}

// lastLines returns the last n lines of the file at path, or why not.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error() + "\n"
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
