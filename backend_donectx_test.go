package filetxn_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// backendDoneCall is one entry point of a store on a backend called with a
// done ctx; waits tells whether it must take the lock (it then writes N+1
// on a free one, and fails on a busy one).
type backendDoneCall struct {
	name  string
	waits bool
	call  func(ctx context.Context, s *filetxn.Store[*memCount]) error
}

func backendDoneCalls() []backendDoneCall {
	inc := func(d *memCount) error { d.N++; return nil }
	return []backendDoneCall{
		{"Mutate", true, func(ctx context.Context, s *filetxn.Store[*memCount]) error { _, err := s.Mutate(ctx, inc); return err }},
		{"MutateProbed", true, func(ctx context.Context, s *filetxn.Store[*memCount]) error {
			_, err := s.MutateProbed(ctx, inc)
			return err
		}},
		{"Locked", true, func(ctx context.Context, s *filetxn.Store[*memCount]) error {
			return s.Locked(ctx, func(tx *filetxn.Tx) error { return lockedInc(tx, s) })
		}},
		{"MutateAll", true, func(ctx context.Context, s *filetxn.Store[*memCount]) error {
			_, err := filetxn.MutateAll(ctx, []filetxn.Member{s}, func(m *filetxn.Multi) error {
				filetxn.In(m, s).N++
				return nil
			})
			return err
		}},
		{"MutateProbed no-op", false, func(ctx context.Context, s *filetxn.Store[*memCount]) error {
			_, err := s.MutateProbed(ctx, func(*memCount) error { return nil })
			return err
		}},
		{"View", false, func(ctx context.Context, s *filetxn.Store[*memCount]) error { _, err := s.View(ctx); return err }},
	}
}

// TestBackendDoneContextTakesAFreeLock: on a backend as on files
// (TestDoneContextRunsOnAFreeLock), a ctx already done bounds waiting and
// nothing else: every entry point called with one on a free lock runs, a
// writing one writes, a reading one reads, though memback fails every
// request whose ctx is done, as etcd does. Ablations, each red: lockRemote
// giving b.Lock the done ctx (its one try under bound.Try left out, as it
// was) fails every call that waits with ctx's error; bound.Held returning
// ctx itself fails them at the read under the lock; remoteGet without its
// try fails View.
func TestBackendDoneContextTakesAFreeLock(t *testing.T) {
	for how, ctx := range testkit.DoneContexts() {
		for _, c := range backendDoneCalls() {
			t.Run(how+"/"+c.name, func(t *testing.T) {
				cl := newMemCluster()
				s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(cl.Backend()))
				require.NoError(t, err)
				_, err = s.Mutate(context.Background(), func(d *memCount) error { d.N = 41; return nil })
				require.NoError(t, err)
				err = c.call(ctx, s)
				require.NoError(t, err, "%s(%s ctx, free lock) = %v, want nil", c.name, how, err)
				want := 41
				if c.waits {
					want = 42
				}
				got, err := s.View(context.Background())
				require.NoError(t, err)
				assert.Equal(t, want, got.N, "document after %s(%s ctx, free lock)", c.name, how)
			})
		}
	}
}

// TestBackendDoneContextFailsAtOnceOnABusyLock: with the lock held by
// another session, or by another goroutine of this process (the engine's
// queue), every entry point that must take it, called with a ctx already
// done, fails at once with the error files give
// (TestDoneContextFailsAtOnceOnABusyLock): one matching ctx.Err(), not
// lock.ErrWouldBlock, that carries a *lock.BusyError naming the lock; those
// that need not wait read as usual. A store WithNoWait says
// lock.ErrWouldBlock, as files' TryAcquire does. Ablations, each red:
// asBusy left out (the try's error as the backend gives it: it matches
// lock.ErrWouldBlock, not ctx.Err()); lockRemote without its one try (the
// other session's memback says ctx's error bare, no *lock.BusyError, and
// the WithNoWait store then fails on the free lock); remoteGet without its
// try (the no-op MutateProbed and View fail).
func TestBackendDoneContextFailsAtOnceOnABusyLock(t *testing.T) {
	holders := map[string]func(t *testing.T, cl *memCluster, s *filetxn.Store[*memCount]) (release func()){
		"other session": func(t *testing.T, cl *memCluster, s *filetxn.Store[*memCount]) func() {
			h, err := cl.Backend().Lock(context.Background(), s.Name(), false)
			require.NoError(t, err)
			return func() { require.NoError(t, h.Release()) }
		},
		"this process": func(t *testing.T, cl *memCluster, s *filetxn.Store[*memCount]) func() {
			held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				done <- s.Locked(context.Background(), func(*filetxn.Tx) error { close(held); <-release; return nil })
			}()
			<-held
			return func() { close(release); require.NoError(t, <-done) }
		},
	}
	for who, hold := range holders {
		for how, ctx := range testkit.DoneContexts() {
			t.Run(who+"/"+how, func(t *testing.T) {
				cl := newMemCluster()
				b := cl.Backend()
				s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
				require.NoError(t, err)
				_, err = s.Mutate(context.Background(), func(d *memCount) error { d.N = 41; return nil })
				require.NoError(t, err)
				release := hold(t, cl, s)
				for _, c := range backendDoneCalls() {
					start := time.Now()
					err := c.call(ctx, s)
					took := time.Since(start)
					if c.waits {
						var busy *lock.BusyError
						require.ErrorIs(t, err, ctx.Err(), "%s(%s ctx, busy lock) = %v, want an error matching %v", c.name, how, err, ctx.Err())
						require.NotErrorIs(t, err, lock.ErrWouldBlock, "%s(%s ctx, busy lock) = %v: files say ctx's error, not ErrWouldBlock", c.name, how, err)
						require.True(t, errors.As(err, &busy) && busy.Path == s.Name(), "%s(%s ctx, busy lock) = %v, want a *lock.BusyError naming %s", c.name, how, err, s.Name())
					} else {
						require.NoError(t, err, "%s(%s ctx, busy lock) = %v, want nil: it need not wait", c.name, how, err)
					}
					require.Less(t, took, time.Second, "%s(%s ctx, busy lock) took %v, want it to return at once", c.name, how, took)
				}
				nw, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(b), filetxn.WithNoWait())
				require.NoError(t, err)
				_, err = nw.Mutate(ctx, func(d *memCount) error { d.N++; return nil })
				require.ErrorIs(t, err, lock.ErrWouldBlock, "WithNoWait Mutate(%s ctx, busy lock)", how)
				release()

				_, err = nw.Mutate(ctx, func(d *memCount) error { d.N++; return nil })
				require.NoError(t, err, "WithNoWait Mutate(%s ctx, free lock)", how)
				got, err := s.View(context.Background())
				require.NoError(t, err)
				assert.Equal(t, 42, got.N, "document after the calls")
			})
		}
	}
}

// TestBackendDoneContextMutateAllLetsGoOfWhatItTook: a MutateAll under a
// done ctx whose second lock is busy fails at once as a Mutate does, and
// gives back the first lock it took in its one try: another session then
// takes it without wait. Ablation: lockRemote without its release on an
// early end leaves the first lock held (the other session's Lock without
// wait fails).
func TestBackendDoneContextMutateAllLetsGoOfWhatItTook(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cl := newMemCluster()
	b := cl.Backend()
	a, err := filetxn.NewStore("a.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	z, err := filetxn.NewStore("z.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	h, err := cl.Backend().Lock(context.Background(), "z.json", false)
	require.NoError(t, err)
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{a, z}, func(m *filetxn.Multi) error { return nil })
	var busy *lock.BusyError
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, errors.As(err, &busy) && busy.Path == "z.json", "MutateAll(done ctx, z busy) = %v, want a *lock.BusyError naming z.json", err)
	ha, err := cl.Backend().Lock(context.Background(), "a.json", false)
	require.NoError(t, err, "a.json after the MutateAll: want it given back")
	require.NoError(t, ha.Release())
	require.NoError(t, h.Release())
}

// TestBackendCtxEndingUnderTheLockStopsNothing: a ctx that ends while the
// lock is held (in fn) no longer bounds anything, on a backend as on files:
// the read done, the commit still publishes, for Mutate, Locked and
// MutateAll. Ablation: bound.Held returning ctx itself (remoteTx's and
// multi's requests made with ctx, as they were) fails them with
// context.Canceled.
func TestBackendCtxEndingUnderTheLockStopsNothing(t *testing.T) {
	cl := newMemCluster()
	s, err := filetxn.NewStore(filepath.Join("p", "n.json"), filetxn.JSON[memCount](), filetxn.WithBackend(cl.Backend()))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	_, err = s.Mutate(ctx, func(d *memCount) error { cancel(); d.N++; return nil })
	require.NoError(t, err, "Mutate whose ctx ends in fn")

	ctx, cancel = context.WithCancel(context.Background())
	err = s.Locked(ctx, func(tx *filetxn.Tx) error {
		cancel()
		return lockedInc(tx, s)
	})
	require.NoError(t, err, "Locked whose ctx ends in fn")

	ctx, cancel = context.WithCancel(context.Background())
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{s}, func(m *filetxn.Multi) error {
		cancel()
		filetxn.In(m, s).N++
		return nil
	})
	require.NoError(t, err, "MutateAll whose ctx ends in fn")
	got, err := s.View(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, got.N)
}

// lockedInc is a Locked callback's increment of s's counter: read,
// decode, add one, encode, write.
func lockedInc(tx *filetxn.Tx, s *filetxn.Store[*memCount]) error {
	data, err := tx.Read(s.Name())
	if err != nil {
		return err
	}
	d, err := filetxn.JSON[memCount]().Decode(data)
	if err != nil {
		return err
	}
	d.N++
	out, err := filetxn.JSON[memCount]().Encode(d)
	if err != nil {
		return err
	}
	_, err = tx.Write(s.Name(), out)
	return err
}
