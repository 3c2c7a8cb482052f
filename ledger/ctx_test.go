package ledger

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// TestAppendWithDoneContextTriesOnce: a ctx that is already done bounds the
// wait for the lock and nothing else. On a free lock Append appends; on a
// lock held by another goroutine it returns at once an error matching
// ctx.Err() and carrying a *lock.BusyError, and writes nothing; a spec
// already filed is answered from the lock-free read either way. Ablation:
// the probe's old "a failed read with a done ctx returns its error", with
// ReadBytes returning ctx.Err() first as it did, fails the free lock case.
func TestAppendWithDoneContextTriesOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := openShared(t.TempDir())
	a := Spec{Title: "a", Origin: "oa", SourceSpec: "s", Reason: "r"}
	ids, err := s.Append(ctx, a)
	require.True(t, err == nil && len(ids) == 1 && ids[0] == "DW-1", "Append(canceled ctx, free lock) = %v, %v, want [DW-1]", ids, err)

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

	ids, err = s.Append(ctx, Spec{Title: "b", Origin: "ob", SourceSpec: "s", Reason: "r"})
	var busy *lock.BusyError
	require.True(t, errors.Is(err, context.Canceled) && errors.As(err, &busy), "Append(canceled ctx, busy lock) = %v, %v, want context.Canceled and a *lock.BusyError", ids, err)
	ids, err = s.Append(ctx, a)
	require.True(t, err == nil && len(ids) == 1 && ids[0] == "", "Append(canceled ctx, busy lock, already filed) = %v, %v, want [\"\"] without the lock", ids, err)
	got, err := os.ReadFile(s.path)
	require.True(t, err == nil && !strings.Contains(string(got), "### DW-2"), "ledger after a busy Append =\n%s\n%v, want no DW-2", got, err)
}
