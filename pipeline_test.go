package filetxn

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// The durable write of a Mutate is pipelined: under the lock it writes and
// fsyncs the temporary file, checks the lock and renames; then it releases
// the lock, fsyncs the directory, and only then answers its callers. The
// tests below hold a batch inside that directory fsync (at seam.SyncDir)
// to look at the lock and the callers from there.

// quiet is how long a caller must stay unanswered before a test believes
// it is waiting for something.
const quiet = 100 * time.Millisecond

// inSync is what a test saw from inside a batch's directory fsync.
type inSync struct {
	lockErr  error // TryAcquire of the lock, from another goroutine
	answered int   // followers of the batch answered meanwhile
}

// groupOfThree queues three Mutates on s that will share one batch,
// behind a leader whose fn changes nothing and holds the lock until run is
// called (so that its own transaction writes nothing, and the one write is
// theirs); then the first of the three leads the other two. It returns
// their outcomes, the leader of their batch first, and run, which lets the
// first leader finish and checks that it wrote nothing.
func groupOfThree(t *testing.T, s *Store[*kv], ctx context.Context) (outs []<-chan outcome, run func()) {
	t.Helper()
	queued := watchQueue(t)
	inside, rel := make(chan struct{}), make(chan struct{})
	first := start(s, ctx, func(*kv) error { close(inside); <-rel; return nil })
	within(t, inside, "the first leader's fn to run")
	var runs sync.Map
	for _, k := range []string{"a", "b", "c"} {
		outs = append(outs, follow(t, s, ctx, queued, set(&runs, k)))
	}
	return outs, func() {
		t.Helper()
		close(rel)
		o := within(t, first, "the first leader's Mutate")
		require.NoError(t, o.err, "the first leader's Mutate")
		require.False(t, o.commit.Written, "the first leader's Mutate wrote, want a no-op")
	}
}

// TestMutateGroupSyncsTheDirectoryBetweenTheLockAndTheAnswers: the one
// directory fsync of a batch of three Mutates runs after the lock has been
// released (another goroutine can take it meanwhile) and before any caller
// is answered (the two followers stay waiting through it); all three then
// succeed with the three changes in the file.
//
// Ablations, each seen red: answering the followers in finish (before the
// lock is released and the directory fsynced) answers them during the
// fsync; running the directory fsync in finish, under the lock, makes the
// TryAcquire from inside it fail with lock.ErrWouldBlock.
func TestMutateGroupSyncsTheDirectoryBetweenTheLockAndTheAnswers(t *testing.T) {
	s, ctx, writes := groupStore(t)
	lockPath, err := s.LockPath()
	require.NoError(t, err)

	seen := make(chan inSync, 1)
	var once sync.Once
	outs, run := groupOfThree(t, s, ctx)
	seam.Set(t, func(p seam.Point, _ string) error {
		if p != seam.SyncDir {
			return nil
		}
		once.Do(func() {
			var v inSync
			got := make(chan error, 1)
			go func() { // the fsync runs on the batch leader's goroutine
				h, err := lock.TryAcquire(lockPath)
				if err == nil {
					err = h.Release()
				}
				got <- err
			}()
			v.lockErr = <-got
			time.Sleep(quiet) // a follower answered early has sent its outcome by now
			for _, out := range outs[1:] {
				v.answered += len(out)
			}
			seen <- v
		})
		return nil
	})
	run()

	v := within(t, seen, "the batch's directory fsync")
	require.NoError(t, v.lockErr, "TryAcquire(%s) during the batch's directory fsync = %v, want nil (the lock released)", lockPath, v.lockErr)
	require.Zero(t, v.answered, "followers answered during the batch's directory fsync = %d, want 0", v.answered)
	for i, out := range outs {
		o := within(t, out, "a Mutate of the batch")
		require.NoError(t, o.err, "Mutate %d of the batch", i)
		require.True(t, o.commit.Written, "Mutate %d of the batch: Written = false, want true", i)
	}
	require.Equal(t, int64(1), writes.Load(), "writes of the batch = %d, want 1", writes.Load())
	require.Equal(t, map[string]string{"a": "1", "b": "1", "c": "1"}, fileKeys(t, s), "the file after the batch")
}

// TestMutateGroupDirSyncFailureReachesEveryCaller: when the directory fsync
// of a batch's write fails, each of its callers gets an error that matches
// the errno, names the data file and says the file was replaced, with a
// Commit that reports the write; the file holds every change (the rename
// happened), and the next Mutate succeeds.
//
// Ablation: setting the fsync's error on the leader's call only (answer's
// loop over b.ran cut to b.ran[:1]) leaves the followers with nil, and the
// test goes red.
func TestMutateGroupDirSyncFailureReachesEveryCaller(t *testing.T) {
	s, ctx, _ := groupStore(t)
	var failed int
	seam.Set(t, func(step seam.Point, path string) error {
		if step == seam.SyncDir && failed == 0 {
			failed++
			return syscall.EIO
		}
		return nil
	})
	outs, run := groupOfThree(t, s, ctx)
	run()
	for i, out := range outs {
		o := within(t, out, "a Mutate of the batch")
		require.ErrorIs(t, o.err, syscall.EIO, "Mutate %d of the batch = %v, want it to match EIO", i, o.err)
		require.ErrorContains(t, o.err, s.path, "Mutate %d of the batch = %v, want it to name %s", i, o.err, s.path)
		require.ErrorContains(t, o.err, "replaced, but the directory was not synced", "Mutate %d of the batch = %v", i, o.err)
		require.True(t, o.commit.Written, "Mutate %d of the batch: Written = false, want true (the rename happened)", i)
	}
	require.Equal(t, 1, failed, "directory fsyncs failed = %d, want 1", failed)
	require.Equal(t, map[string]string{"a": "1", "b": "1", "c": "1"}, fileKeys(t, s), "the file after the batch")
	_, err := s.Mutate(ctx, set(new(sync.Map), "d"))
	require.NoError(t, err, "the Mutate after the failed fsync")
}

// TestLockedWriteSyncsTheDirectoryUnderTheLock: Tx.Write inside Locked is
// durable when it returns, so its directory fsync runs while the lock is
// held (a TryAcquire from another goroutine meanwhile finds it busy), and a
// failure of that fsync is Write's error, with a Commit that reports the
// write. Ablation: returning Write's directory fsync unrun makes the hook
// never fire, and the test goes red.
func TestLockedWriteSyncsTheDirectoryUnderTheLock(t *testing.T) {
	s, ctx, _ := groupStore(t)
	lockPath, err := s.LockPath()
	require.NoError(t, err)
	var lockErr error
	fired := false
	remove := seam.Set(t, func(p seam.Point, _ string) error {
		if p != seam.SyncDir {
			return nil
		}
		fired = true
		got := make(chan error, 1)
		go func() {
			h, err := lock.TryAcquire(lockPath)
			if err == nil {
				err = h.Release()
			}
			got <- err
		}()
		lockErr = <-got
		return nil
	})
	err = s.Locked(ctx, func(tx *Tx) error {
		_, err := tx.Write(s.path, []byte(`{"x":"1"}`+"\n"))
		return err
	})
	require.NoError(t, err, "Locked with one Write")
	require.True(t, fired, "Tx.Write fsynced no directory")
	require.ErrorIs(t, lockErr, lock.ErrWouldBlock, "TryAcquire(%s) during Tx.Write's directory fsync = %v, want lock.ErrWouldBlock", lockPath, lockErr)

	remove()
	seam.Set(t, func(step seam.Point, path string) error {
		if step == seam.SyncDir {
			return syscall.EIO
		}
		return nil
	})
	var c Commit
	err = s.Locked(ctx, func(tx *Tx) error {
		c, err = tx.Write(s.path, []byte(`{"y":"1"}`+"\n"))
		return err
	})
	require.ErrorIs(t, err, syscall.EIO, "Tx.Write with a failing directory fsync = %v, want it to match EIO", err)
	require.ErrorContains(t, err, "replaced, but the directory was not synced", "Tx.Write with a failing directory fsync")
	require.True(t, c.Written, "Tx.Write with a failing directory fsync: Written = false, want true")
	got, rerr := os.ReadFile(s.path)
	require.NoError(t, rerr)
	require.Equal(t, `{"y":"1"}`+"\n", string(got), "the file after Tx.Write's failed directory fsync")
}

// TestWriteNoticesALockLostDuringTheTempFsync: the lost-lock check of a
// write comes after the temporary file's fsync, so a lock file removed
// while that fsync runs (here: at its seam, right before it) is
// noticed, and nothing is published. Ablation: atomicfile's publish
// calling check before the fsync instead of after it publishes the write
// over the lost lock, and the test goes red.
func TestWriteNoticesALockLostDuringTheTempFsync(t *testing.T) {
	for _, how := range []string{"removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			s, ctx, writes := groupStore(t)
			lockPath, err := s.LockPath()
			require.NoError(t, err)
			_, err = s.Mutate(ctx, set(new(sync.Map), "before")) // the lock file exists
			require.NoError(t, err)
			before, err := os.ReadFile(s.path)
			require.NoError(t, err)
			writes.Store(0)
			remove := seam.Set(t, func(step seam.Point, path string) error {
				if step == seam.Sync && filepath.Base(path) == filepath.Base(s.path) {
					loseLock(t, how, lockPath)
				}
				return nil
			})
			_, err = s.Mutate(ctx, set(new(sync.Map), "lost"))
			remove()
			require.ErrorIs(t, err, lock.ErrLockLost, "Mutate with the lock %s during the fsync = %v, want lock.ErrLockLost", how, err)
			require.Zero(t, writes.Load(), "renames after the lock was %s = %d, want 0", how, writes.Load())
			after, err := os.ReadFile(s.path)
			require.NoError(t, err)
			require.Equal(t, string(before), string(after), "the file after the lock was %s during the fsync", how)
			entries, err := os.ReadDir(filepath.Dir(s.path))
			require.NoError(t, err)
			for _, e := range entries {
				require.Contains(t, []string{filepath.Base(s.path), filepath.Base(lockPath)}, e.Name(), "a file beside the data after the lock was %s", how)
			}
		})
	}
}

// TestMutateGroupWriteFailureReachesTheCallsThatSawItsChanges: a call of a
// batch that changes nothing, but ran after another call's change (here it
// sets the key that the call before it set), decided on that change: when
// the batch's write fails, or only its directory fsync does, it gets the
// write's error too, with a Commit that reports no write of its own, rather
// than a nil error for a state that the file does not have, or that a crash
// may undo. Ablation: answering the write's outcome to the calls that
// changed the document only (as finish and answer did) leaves the second
// call with a nil error, and this test goes red.
func TestMutateGroupWriteFailureReachesTheCallsThatSawItsChanges(t *testing.T) {
	for _, tt := range []struct {
		step     seam.Point
		replaced bool // the rename happened: the file holds the change
	}{
		{seam.Rename, false},
		{seam.SyncDir, true},
	} {
		t.Run(string(tt.step), func(t *testing.T) {
			s, ctx, _ := groupStore(t)
			queued := watchQueue(t)
			release, leader := hold(t, s, ctx, nil)
			var runs sync.Map
			changer := follow(t, s, ctx, queued, set(&runs, "a"))
			again := follow(t, s, ctx, queued, set(&runs, "a")) // already set by the call before it
			var failed atomic.Int64
			seam.Set(t, func(step seam.Point, path string) error {
				if step == tt.step && failed.Add(1) == 2 { // the first is the leader's own write
					return syscall.EIO
				}
				return nil
			})
			release()
			require.NoError(t, within(t, leader, "the leader").err, "the leader's Mutate")
			c := within(t, changer, "the changing call")
			require.ErrorIs(t, c.err, syscall.EIO, "the changing call's Mutate = %v, want it to match EIO", c.err)
			require.Equal(t, tt.replaced, c.commit.Written, "the changing call's Commit.Written = %v, want %v", c.commit.Written, tt.replaced)
			a := within(t, again, "the call after it")
			require.ErrorIs(t, a.err, syscall.EIO, "Mutate(set a again) after a change whose write failed = %v, want it to match EIO", a.err)
			require.ErrorContains(t, a.err, s.path, "Mutate(set a again) after a change whose write failed = %v, want it to name %s", a.err, s.path)
			require.False(t, a.commit.Written, "Mutate(set a again): Written = true, want false (its fn changed nothing)")
			_, inFile := fileKeys(t, s)["a"]
			require.Equal(t, tt.replaced, inFile, "key a in the file = %v, want %v", inFile, tt.replaced)
		})
	}
}
