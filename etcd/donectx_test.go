package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
)

// TestDoneContextOnEtcd: a Mutate under a ctx already done takes a free
// lock on etcd and writes, as on files: on a new session (a lease granted,
// the lock queued), on the session's kept lock, and on a lock another
// session keeps idle, which it gives up within its no-wait bound; on a lock
// another session holds it fails at once with the files' error, one
// matching ctx.Err() (not lock.ErrWouldBlock) that carries a
// *lock.BusyError. Ablation: the engine's lockRemote giving Backend.Lock
// the done ctx (its one try under bound.Try left out, as it was) fails the
// first Mutate with context.Canceled; asBusy left out makes the busy one
// match lock.ErrWouldBlock.
func TestDoneContextOnEtcd(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	done, cancel := context.WithCancel(ctx)
	cancel()
	inc := func(d *count) error { d.N++; return nil }

	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "done")))
	require.NoError(t, err)
	_, err = s.Mutate(done, inc)
	require.NoError(t, err, "Mutate(canceled ctx) on an uncontended store, new session")
	_, err = s.Mutate(done, inc)
	require.NoError(t, err, "Mutate(canceled ctx) on the session's kept lock")

	// Another session keeps the lock idle (its last Mutate wrote): it
	// gives it up to the one try.
	other, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "done")))
	require.NoError(t, err)
	_, err = other.Mutate(ctx, inc)
	require.NoError(t, err)
	_, err = s.Mutate(done, inc)
	require.NoError(t, err, "Mutate(canceled ctx) on a lock another session keeps idle")
	got, err := s.View(done)
	require.NoError(t, err, "View(canceled ctx)")
	assert.Equal(t, 4, got.N)

	// Another session holds it.
	h, err := newBackend(t, c, "done").Lock(ctx, "n.json", true)
	require.NoError(t, err)
	start := time.Now()
	_, err = s.Mutate(done, inc)
	took := time.Since(start)
	var busy *lock.BusyError
	require.ErrorIs(t, err, context.Canceled, "Mutate(canceled ctx) on a held lock")
	require.NotErrorIs(t, err, lock.ErrWouldBlock, "Mutate(canceled ctx) on a held lock: files say ctx's error")
	require.True(t, errors.As(err, &busy), "Mutate(canceled ctx) on a held lock = %v, want a *lock.BusyError", err)
	assert.Less(t, took, 3*time.Second, "Mutate(canceled ctx) on a held lock took %v, want it at once (within etcd's one-second answer to a lock without wait)", took)
	require.NoError(t, h.Release())
	got, err = s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, got.N, "nothing written by the refused Mutate")
}
