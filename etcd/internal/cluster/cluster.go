// Package cluster runs a real etcd cluster of local processes, one per
// member, each a re-execution of the running binary: the harness of the
// etcd module's tests (package etcdtest wraps it for a testing.TB), of its
// demo and of its benchmarks.
//
// A binary that starts clusters calls [RunMember] first thing in main (or
// TestMain): in a process started as a member it runs the member and
// exits. [Start] runs n members on 127.0.0.1 at free ports; [Cluster.Kill]
// and [Cluster.Restart] crash and revive one on its data directory and
// ports; [Cluster.Close] kills them all.
//
// Every wait is bounded by [Timeout]. Members log to files, never to the
// caller's output, do not fsync unless [Config].Fsync says so (they survive
// a process crash, which the page cache outlives, not a power loss) and are
// tuned to start and elect quickly. On Linux each dies with the thread that started it, and every
// member exits by itself when its parent goes away. Unix only: elsewhere
// Start returns an error matching errors.ErrUnsupported.
package cluster

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
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Timeout bounds every wait: a member that takes longer to come up or to
// go down is an error rather than a hang.
const Timeout = 2 * time.Minute

// memberEnv is the environment variable that makes the binary a member: a
// member's spec, as JSON.
const memberEnv = "ETCDTEST_MEMBER"

// RunMember runs the member, and exits, if the process was started as one
// by Start; otherwise it returns at once.
func RunMember() {
	if spec := os.Getenv(memberEnv); spec != "" {
		os.Exit(runMember(spec))
	}
}

// Config describes the cluster Start makes. Zero fields take defaults.
type Config struct {
	Dir       string         // where logs and data directories go (required)
	DataDirs  map[int]string // member i's data directory, instead of one under Dir
	Heartbeat time.Duration  // default 50ms
	Election  time.Duration  // default 500ms; etcd wants at least 5 heartbeats
	Segment   int64          // the WAL segment size, allocated in full; default 1 MiB
	Fsync     bool           // members fsync as etcd does by default, and survive a power loss (slower)
}

// A Cluster is an etcd cluster started by Start. Its methods are for one
// goroutine.
type Cluster struct {
	dir     string
	members []*member
	admin   *clientv3.Client // to every member, for Leader
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
	Parent                  int // the pid of the starting process, to outlive it not
	ClusterState            string
	SnapshotCount, CatchUps uint64
	Fsync                   bool
}

// Start starts an n-member cluster and returns once every member answers a
// linearizable read (or after Timeout, with an error and nothing left
// running).
func Start(n int, cfg Config) (*Cluster, error) {
	if !Supported {
		return nil, fmt.Errorf("cluster: a cluster of processes needs a Unix system: %w", errors.ErrUnsupported)
	}
	if n < 1 || cfg.Dir == "" {
		return nil, fmt.Errorf("cluster: Start(%d members, dir %q): want at least one member and a directory", n, cfg.Dir)
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 50 * time.Millisecond
	}
	if cfg.Election == 0 {
		cfg.Election = 500 * time.Millisecond
	}
	if cfg.Segment == 0 {
		cfg.Segment = 1 << 20
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: cfg.Dir}
	var initial []string
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		dir := cfg.DataDirs[i]
		if dir == "" {
			dir = filepath.Join(cfg.Dir, name)
		}
		m := &member{
			spec: memberSpec{
				Name:          name,
				Dir:           dir,
				Log:           filepath.Join(cfg.Dir, name+".log"),
				PeerURL:       fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
				ClientURL:     fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
				Token:         fmt.Sprintf("filetxn-%d", os.Getpid()),
				TickMs:        uint(cfg.Heartbeat / time.Millisecond),
				ElectionMs:    uint(cfg.Election / time.Millisecond),
				SegmentSize:   cfg.Segment,
				Parent:        os.Getpid(),
				ClusterState:  "new",
				SnapshotCount: 1000,
				CatchUps:      100,
				Fsync:         cfg.Fsync,
			},
			stderr: filepath.Join(cfg.Dir, name+".out"),
		}
		initial = append(initial, name+"="+m.spec.PeerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.spec.InitialCluster = strings.Join(initial, ",")
	}
	fail := func(err error) (*Cluster, error) {
		c.Close()
		return nil, err
	}
	for i := range c.members {
		if err := c.start(i); err != nil {
			return fail(err)
		}
	}
	if c.admin, err = NewClient(c.Endpoints()); err != nil {
		return fail(err)
	}
	for i := range c.members {
		if err := c.waitReady(i); err != nil {
			return fail(err)
		}
	}
	return c, nil
}

// NewClient returns a client of endpoints that logs nothing and fails over
// from a dead member to another on its own.
func NewClient(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("cluster: client of %v: %w", endpoints, err)
	}
	return cli, nil
}

// freePorts returns n distinct TCP ports of 127.0.0.1 that were free a
// moment ago: all held open together, so that none is chosen twice.
func freePorts(n int) ([]int, error) {
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
			return nil, fmt.Errorf("cluster: a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// start starts a process for member i.
func (c *Cluster) start(i int) error {
	m := c.members[i]
	spec, err := json.Marshal(m.spec)
	if err != nil {
		return fmt.Errorf("cluster: member %d: %w", i, err)
	}
	out, err := os.OpenFile(m.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cluster: member %d: %w", i, err)
	}
	defer out.Close()
	cmd, err := Command()
	if err != nil {
		return fmt.Errorf("cluster: member %d: %w", i, err)
	}
	cmd.Env = append(os.Environ(), memberEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: member %d: %w", i, err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		m.err = cmd.Wait()
		close(done)
	}(m.done)
	return nil
}

// Command returns a command, not yet started, that runs the running binary
// again with no arguments, killed (on Linux) when the thread that starts
// it dies: the caller's environment decides what the new process is.
func Command() (*exec.Cmd, error) {
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
func (c *Cluster) waitReady(i int) error {
	m := c.members[i]
	cli, err := NewClient([]string{m.spec.ClientURL})
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(Timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = cli.Get(ctx, "cluster-ready")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-m.done:
			return fmt.Errorf("cluster: member %d exited while starting: %v\n%s", i, m.err, c.Tail(i))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: member %d not ready after %v: %w\n%s", i, Timeout, err, c.Tail(i))
		}
	}
}

// Size returns the number of members, dead or alive.
func (c *Cluster) Size() int { return len(c.members) }

// Endpoints returns the client URLs of every member, dead or alive, in
// member order.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.spec.ClientURL
	}
	return eps
}

// Kill kills member i with SIGKILL and waits for its process to exit. A
// member already dead is left as it is.
func (c *Cluster) Kill(i int) error {
	m := c.members[i]
	if !m.running() {
		return nil
	}
	_ = m.cmd.Process.Kill()
	select {
	case <-m.done:
		return nil
	case <-time.After(Timeout):
		return fmt.Errorf("cluster: member %d (pid %d) still running %v after SIGKILL", i, m.cmd.Process.Pid, Timeout)
	}
}

// Restart starts member i again, on its data directory and ports, and
// waits until it answers a linearizable read: it has rejoined the cluster
// and caught up with its leader. A member still running is an error (Kill
// it first).
func (c *Cluster) Restart(i int) error {
	if c.members[i].running() {
		return fmt.Errorf("cluster: Restart(%d): member is running; Kill it first", i)
	}
	if err := c.start(i); err != nil {
		return err
	}
	return c.waitReady(i)
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
			return -1, fmt.Errorf("cluster: no leader: %w", errors.Join(append(errs, ctx.Err())...))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close kills every member and waits for them to exit.
func (c *Cluster) Close() error {
	if c.admin != nil {
		c.admin.Close()
	}
	var errs []error
	for i := range c.members {
		errs = append(errs, c.Kill(i))
	}
	return errors.Join(errs...)
}

// Tail returns the last lines of member i's output and etcd log.
func (c *Cluster) Tail(i int) string {
	m := c.members[i]
	return fmt.Sprintf("--- output (%s):\n%s--- etcd log (%s):\n%s",
		m.stderr, LastLines(m.stderr, 20), m.spec.Log, LastLines(m.spec.Log, 20))
}

// LastLines returns the last n lines of the file at path, or why not.
func LastLines(path string, n int) string {
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
