package etcdtest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMain(m *testing.M) {
	etcdtest.Register("echo-env", func() int {
		fmt.Print(os.Getenv("ETCDTEST_SELFTEST"))
		return 7
	})
	etcdtest.Main(m)
}

// put writes key=val through cli, retrying for as long as ctx lets it
// while the cluster elects a leader.
func put(ctx context.Context, t *testing.T, cli *clientv3.Client, key, val string) {
	t.Helper()
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cli.Put(rctx, key, val)
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("Put(%s) = %v, want nil", key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterSurvivesItsLeader starts three members, writes, kills the
// leader, writes again through the two left, and restarts the dead member,
// which must then hold both writes.
func TestClusterSurvivesItsLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Timeout)
	defer cancel()
	start := time.Now()
	c := etcdtest.Start(t, 3)
	t.Logf("3 members ready in %v", time.Since(start))
	cli := c.Client(t)
	put(ctx, t, cli, "a", "1")
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	start = time.Now()
	c.Kill(leader)
	if c.Running(leader) {
		t.Fatalf("Running(%d) = true after Kill, want false", leader)
	}
	put(ctx, t, cli, "b", "2")
	next, err := c.Leader(ctx)
	if err != nil || next == leader {
		t.Fatalf("Leader() = %d, %v after killing %d, want another", next, err, leader)
	}
	t.Logf("leader %d killed; write through new leader %d after %v", leader, next, time.Since(start))
	start = time.Now()
	c.Restart(leader)
	t.Logf("member %d back in %v", leader, time.Since(start))
	one, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoints()[leader]}})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	for _, kv := range []string{"a=1", "b=2"} {
		k, v, _ := strings.Cut(kv, "=")
		resp, err := one.Get(ctx, k, clientv3.WithSerializable())
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != v {
			t.Errorf("Get(%s) on restarted member %d = %v, %v, want %s", k, leader, resp, err, v)
		}
	}
}

// TestChildRunsARegisteredFunction runs a registered function in a child
// process, with the environment given, and gets its output and status.
func TestChildRunsARegisteredFunction(t *testing.T) {
	cmd := etcdtest.Child(t, "echo-env", "ETCDTEST_SELFTEST=hello")
	out, err := cmd.Output()
	if string(out) != "hello" {
		t.Errorf("child output = %q, want %q", out, "hello")
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("child exit = %v, want status 7", err)
	}
}
