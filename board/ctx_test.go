package board

import (
	"context"
	"errors"
	"github.com/filetxn/filetxn"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// TestAdvanceWithDoneContextTriesOnce: a ctx that is already done bounds
// the wait for the lock and nothing else. On a free lock Advance moves the
// row; on a lock held by another goroutine it returns at once an error
// matching ctx.Err() and carrying a *lock.BusyError, and writes nothing; an
// Advance that needs no write answers from its lock-free read either way.
// Ablation: putting back Advance's early ctx.Err() return fails the free
// lock and no-op cases.
func TestAdvanceWithDoneContextTriesOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "sprint-status.yaml"), filetxn.WithStateRoot(filepath.Join(dir, "state")))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.path, []byte(lostBoard), 0o644))

	got, err := s.Advance(ctx, "1-1-a", "in-progress")
	require.True(t, err == nil && got == "in-progress", "Advance(canceled ctx, free lock) = %q, %v, want in-progress", got, err)

	lockPath, err := s.LockPath()
	require.NoError(t, err)
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		h, err := lock.Acquire(context.Background(), lockPath)
		if err == nil {
			close(held)
			<-release
			err = h.Release()
		}
		done <- err
	}()
	<-held
	defer func() { close(release); require.NoError(t, <-done) }()

	got, err = s.Advance(ctx, "1-2-b", "review")
	var busy *lock.BusyError
	require.True(t, errors.Is(err, context.Canceled) && errors.As(err, &busy), "Advance(canceled ctx, busy lock) = %q, %v, want context.Canceled and a *lock.BusyError", got, err)
	got, err = s.Advance(ctx, "1-1-a", "ready-for-dev")
	require.True(t, err == nil && got == "in-progress", "Advance(canceled ctx, busy lock, already past) = %q, %v, want in-progress without the lock", got, err)
	st, _, err := storeStatus(ctx, s, "1-2-b")
	require.True(t, err == nil && st == "backlog", "Status(1-2-b) after a busy Advance = %q, %v, want backlog", st, err)
}
