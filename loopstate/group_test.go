package loopstate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/stretchr/testify/require"
)

// TestConcurrentMutatesOfOneLoopShareAWrite: seven Mutates of one Loop that
// arrive while another Mutate of it holds the lock queue behind it and are
// published together by one write after the leader's own: two renames for
// eight calls, and every change in the file. A second kind of call (a
// Pause) on the same Loop meanwhile works as before, alone.
// Ablation (run): engine building a new filetxn.Store on every call (as
// before this change) makes the followers wait for the lock each on a store
// of its own: none of them queues, and the test fails waiting for the first.
func TestConcurrentMutatesOfOneLoopShareAWrite(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "g", Template{})
	var writes atomic.Int64
	queued := make(chan struct{}, 16) // the hook runs under the group's mutex: it must not block
	seam.Set(t, func(p seam.Point, path string) error {
		switch {
		case path != l.state:
		case p == seam.Replaced:
			writes.Add(1)
		case p == seam.Queued:
			queued <- struct{}{}
		}
		return nil
	})
	ctx := context.Background()
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	leader := make(chan error, 1)
	go func() {
		_, err := l.Mutate(ctx, func(d *Doc) error {
			d.Template += "L"
			once.Do(func() { close(inside) })
			<-release
			return nil
		})
		leader <- err
	}()
	testkit.Recv(t, inside, "the leader to hold the lock")
	results := make(chan error, 7)
	for range 7 {
		go func() {
			_, err := l.Mutate(ctx, func(d *Doc) error { d.Template += "f"; return nil })
			results <- err
		}()
		testkit.Recv(t, queued, "a Mutate to queue")
	}
	close(release)
	require.NoError(t, testkit.Recv(t, leader, "the leader"), "leader's Mutate = got, want nil")
	for range 7 {
		require.NoError(t, testkit.Recv(t, results, "a Mutate"), "Mutate = got, want nil")
	}
	require.Equal(t, int64(2), writes.Load(), "renames for 8 Mutates of one Loop = %d, want 2 (the leader's, then one for the 7 queued)", writes.Load())
	d := mustView(t, l)
	require.Equal(t, "Lfffffff", d.Template, "template after 8 Mutates = %q, want every change", d.Template)

	require.NoError(t, l.Pause(ctx, "ops", "after the batch"), "Pause after the batch")
	require.Equal(t, int64(3), writes.Load(), "renames after the Pause = %d, want 3", writes.Load())
}
