package etcd_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/lock"
)

// The environment of an incrementer child.
const (
	endpointsEnv = "FILETXN_ETCD_ENDPOINTS" // comma-separated
	prefixEnv    = "FILETXN_ETCD_PREFIX"
	countEnv     = "FILETXN_ETCD_COUNT"
)

// incrementer is a child process that increments n.json under prefix
// count times, through a Backend of its own.
var _ = func() int {
	etcdtest.Register("incrementer", incrementer)
	return 0
}()

func incrementer() int {
	n, err := strconv.Atoi(os.Getenv(countEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "incrementer:", err)
		return 2
	}
	cl, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(os.Getenv(endpointsEnv), ","), DialTimeout: wait, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "incrementer:", err)
		return 1
	}
	defer cl.Close()
	b, err := etcd.New(cl, os.Getenv(prefixEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "incrementer:", err)
		return 1
	}
	defer b.Close()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	if err != nil {
		fmt.Fprintln(os.Stderr, "incrementer:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for i := range n {
		if _, err := s.Mutate(ctx, func(d *count) error { d.N++; return nil }); err != nil {
			fmt.Fprintf(os.Stderr, "incrementer: Mutate %d: %v\n", i, err)
			return 1
		}
	}
	return 0
}

// TestProcessesExcludeEachOther: two child processes and this one, each
// with a Backend of its own, increment one document; none is lost.
// Ablation: a Lock that takes a mutex of its session's own, with a Commit
// without the document compares, turns it red (lost increments).
func TestProcessesExcludeEachOther(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	const children, each = 2, 20
	env := []string{endpointsEnv + "=" + strings.Join(c.Endpoints(), ","), prefixEnv + "=procs", countEnv + "=" + strconv.Itoa(each)}
	var wg sync.WaitGroup
	for i := range children {
		cmd := etcdtest.Child(t, "incrementer", env...)
		require.NoError(t, cmd.Start())
		wg.Go(func() { assert.NoError(t, cmd.Wait(), "child %d", i) })
	}
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "procs")))
	require.NoError(t, err)
	for i := range each {
		_, err := s.Mutate(ctx, func(d *count) error { d.N++; return nil })
		require.NoError(t, err, "Mutate %d", i)
	}
	wg.Wait()
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, (children+1)*each, got.N, "increments")
}

// holdLock is a child process that takes the lock n.json under prefix with a
// one-second session TTL, says "held" on its standard output, and waits to
// be killed.
var _ = func() int {
	etcdtest.Register("holder", holdLock)
	return 0
}()

func holdLock() int {
	cl, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(os.Getenv(endpointsEnv), ","), DialTimeout: wait, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	b, err := etcd.New(cl, os.Getenv(prefixEnv), etcd.WithSessionTTL(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := b.Lock(ctx, "n.json", true); err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	fmt.Println("held")
	<-ctx.Done()
	return 1
}

// TestKilledHolderFreesItsLockWithItsLease: the lock of a process killed
// while it holds it passes on when its lease expires, and a waiter in
// another process takes it. Ablation: waiter keys put without the lease
// turn it red (the wait ends only with its ctx).
func TestKilledHolderFreesItsLockWithItsLease(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	cmd := etcdtest.Child(t, "holder", endpointsEnv+"="+strings.Join(c.Endpoints(), ","), prefixEnv+"=killed")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the holder's output")
	require.Equal(t, "held\n", line)

	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "killed")), filetxn.WithNoWait())
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *count) error { d.N++; return nil })
	require.ErrorIs(t, err, lock.ErrWouldBlock, "Mutate while the holder lives")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	s, err = filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "killed")))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *count) error { d.N++; return nil })
	require.NoError(t, err, "Mutate after the holder was killed")
}
