package etcdtest

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/filetxn/filetxn/etcd/internal/cluster"
)

// Timeout bounds every wait of the harness: a member that takes longer to
// come up or to go down fails the test rather than hang it.
const Timeout = cluster.Timeout

// childEnv is the environment variable that makes the test binary a child:
// the name of a registered function.
const childEnv = "ETCDTEST_CHILD"

// Main runs the tests of a test binary that uses the harness; call it from
// TestMain (after any [Register]). In a process that the harness started
// as a member or a child it runs that instead and exits; otherwise it runs
// the tests and exits with their status. It never returns.
func Main(m *testing.M) {
	cluster.RunMember()
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(runChild(name))
	}
	os.Exit(m.Run())
}

// An Option tunes the cluster that [Start] makes.
type Option func(*cluster.Config)

// WithDataDir puts the data directory of member i in dir (which need not
// exist; etcd makes it) instead of under the test's temporary directory.
// The harness does not remove it.
func WithDataDir(i int, dir string) Option {
	return func(c *cluster.Config) {
		if c.DataDirs == nil {
			c.DataDirs = map[int]string{}
		}
		c.DataDirs[i] = dir
	}
}

// WithTimeouts sets the members' heartbeat interval and election timeout,
// which etcd wants at least five heartbeats long. The defaults are short,
// for a quick start and a quick election after a leader dies.
func WithTimeouts(heartbeat, election time.Duration) Option {
	return func(c *cluster.Config) { c.Heartbeat, c.Election = heartbeat, election }
}

// WithWALSegment sets the size of each write-ahead log segment, which etcd
// allocates in full when it opens one. The default is small, to spare the
// disk; a member meant to run out of space wants it smaller still.
func WithWALSegment(size int64) Option {
	return func(c *cluster.Config) { c.Segment = size }
}

// A Cluster is an etcd cluster started by [Start], each member a process of
// its own. Its methods are for the test's goroutine: they fail the test
// through the t given to Start.
type Cluster struct {
	t testing.TB
	c *cluster.Cluster
}

// Start starts an n-member cluster and returns once every member answers a
// linearizable read, or fails t (after at most [Timeout]). When the test
// ends (t.Cleanup) every member process is killed, and their logs' tails
// logged if it failed. On a system the harness does not support it skips
// the test.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if !cluster.Supported {
		t.Skip("etcdtest: a cluster of processes needs a Unix system")
	}
	cfg := cluster.Config{Dir: t.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := cluster.Start(n, cfg)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("etcdtest: %v", err)
		}
		if t.Failed() {
			for i := range c.Size() {
				t.Logf("etcdtest: member %d:\n%s", i, c.Tail(i))
			}
		}
	})
	return &Cluster{t: t, c: c}
}

// Endpoints returns the client URLs of every member, dead or alive, in
// member order.
func (c *Cluster) Endpoints() []string { return c.c.Endpoints() }

// Client returns a client of every member's endpoint, which fails over
// from a dead member to another on its own. It is closed when t's test
// ends; it logs nothing.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := cluster.NewClient(c.Endpoints())
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Kill kills member i with SIGKILL and waits for its process to exit. A
// member already dead is left as it is.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	if err := c.c.Kill(i); err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
}

// Restart starts member i again, on its data directory and ports, and
// waits until it answers a linearizable read: it has rejoined the cluster
// and caught up with its leader. It fails the test if the member is still
// running (Kill it first).
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.c.Restart(i); err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
}

// Running reports whether member i's process is running: it has not been
// killed, nor exited by itself (as a member whose disk is full may).
func (c *Cluster) Running(i int) bool { return c.c.Running(i) }

// Leader returns the index of the member that is leader, waiting for one
// to be elected as long as ctx lets it. Only a member that says it is
// leader counts, so the answer is one member's word at one moment: a
// leader can be deposed right after.
func (c *Cluster) Leader(ctx context.Context) (int, error) { return c.c.Leader(ctx) }
