package filetxn_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestMutateAllOfANoWaitMemberFailsAtOnceOnABusyLock: a member made
// WithNoWait makes MutateAll fail at once, with an error matching
// lock.ErrWouldBlock, when another holder has one of the locks, as the
// store's own Mutate does; fn does not run. Once the lock is free, the
// commit goes through.
// Ablation: ignoring the members' WithNoWait (MutateAll waiting as for any
// store) blocks this test until its ctx ends, red on "want ErrWouldBlock".
func TestMutateAllOfANoWaitMemberFailsAtOnceOnABusyLock(t *testing.T) {
	dir := t.TempDir()
	a, err := filetxn.NewStore[*counter](filepath.Join(dir, "a.json"), filetxn.JSON[counter]())
	if err != nil {
		t.Fatal(err)
	}
	b, err := filetxn.NewStore[*counter](filepath.Join(dir, "b.json"), filetxn.JSON[counter](), filetxn.WithNoWait())
	if err != nil {
		t.Fatal(err)
	}
	lp, _ := b.LockPath()
	held := make(chan *lock.Handle)
	go func() { // another goroutine holds b's lock
		h, err := lock.Acquire(context.Background(), lp)
		if err != nil {
			t.Error(err)
		}
		held <- h
	}()
	h := testkit.Recv(t, held, "the other holder")
	bump := func(m *filetxn.Multi) error {
		filetxn.In(m, a).N++
		filetxn.In(m, b).N++
		return nil
	}
	// A wait would last until this ctx's end: the test sees that as a wait.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
	defer cancel()
	ran := false
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { ran = true; return bump(m) })
	if !errors.Is(err, lock.ErrWouldBlock) || ran || ctx.Err() != nil {
		t.Errorf("MutateAll with a no-wait member's lock busy = %v (fn ran: %v, ctx: %v), want ErrWouldBlock at once", err, ran, ctx.Err())
	}
	if h != nil {
		h.Release()
	}
	cs, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, bump)
	if err != nil || !cs[0].Written || !cs[1].Written {
		t.Errorf("MutateAll with the lock free = %+v, %v, want both written", cs, err)
	}
}
