//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/filetxn/filetxn/internal/benchkit"
	"github.com/filetxn/filetxn/lock"
	"github.com/gofrs/flock"
	"github.com/rogpeppe/go-internal/lockedfile"
	"golang.org/x/sys/unix"
)

const (
	rowHeldFlock   = "raw flock on a held descriptor"
	rowOpenFlock   = "raw open+flock+close"
	rowGofrs       = "gofrs/flock Lock+Unlock"
	rowLockedfile  = "lockedfile.Mutex Lock+unlock"
	rowLockAcquire = "filetxn lock.Acquire+Release"
	rowLockDeep    = "filetxn lock.Acquire+Release, 30 frames deep"
	rowOpenDeep    = "raw open+flock+close, 30 frames deep"
)

// lockDepth is how many frames below the benchmark's own the deep rows
// take their lock.
const lockDepth = 30

// lockRows returns, for each row of the lock section, a function that takes
// the lock on path and returns its release. The reference is first.
func lockRows(path string) (names []string, acquire map[string]func() (func() error, error), closeAll func(), err error) {
	held, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, nil, err
	}
	fd := int(held.Fd())
	ctx := context.Background()
	filetxnLock := func() (func() error, error) {
		h, err := lock.Acquire(ctx, path)
		if err != nil {
			return nil, err
		}
		return h.Release, nil
	}
	acquire = map[string]func() (func() error, error){
		rowOpenFlock: func() (func() error, error) {
			unlock, err := floorLock(path)
			return func() error { unlock(); return nil }, err
		},
		rowHeldFlock: func() (func() error, error) {
			if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
				return nil, err
			}
			return func() error { return unix.Flock(fd, unix.LOCK_UN) }, nil
		},
		rowGofrs: func() (func() error, error) {
			f := flock.New(path)
			if err := f.Lock(); err != nil {
				return nil, err
			}
			return f.Unlock, nil
		},
		rowLockedfile: func() (func() error, error) {
			unlock, err := lockedfile.MutexAt(path).Lock()
			if err != nil {
				return nil, err
			}
			return func() error { unlock(); return nil }, nil
		},
		rowLockAcquire: filetxnLock,
	}
	// The deep rows pay for their descent too: the target compares
	// filetxn's deep row with the raw row at the same depth, so that both
	// sides of the ratio do the same work.
	for deepRow, row := range map[string]string{rowLockDeep: rowLockAcquire, rowOpenDeep: rowOpenFlock} {
		top := acquire[row]
		acquire[deepRow] = func() (func() error, error) {
			var release func() error
			err := deep(lockDepth, func() (err error) { release, err = top(); return err })
			return release, err
		}
	}
	names = []string{rowOpenFlock, rowHeldFlock, rowGofrs, rowLockedfile, rowLockAcquire, rowOpenDeep, rowLockDeep}
	return names, acquire, func() { held.Close() }, nil
}

// deep calls fn n frames below its caller, as a lock taken deep inside a
// program's call stack is.
//
//go:noinline
func deep(n int, fn func() error) error {
	if n == 0 {
		return fn()
	}
	return deep(n-1, fn)
}

// excludes checks that a row's lock is the kernel's lock on path: while the
// row holds it, a non-blocking flock of another descriptor must fail.
func excludes(path string, acquire func() (func() error, error)) error {
	release, err := acquire()
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		release()
		return err
	}
	defer f.Close()
	ferr := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err := release(); err != nil {
		return err
	}
	if !errors.Is(ferr, unix.EWOULDBLOCK) {
		if ferr == nil {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
		return fmt.Errorf("flock(LOCK_NB) of %s while the row holds its lock = %v, want EWOULDBLOCK", path, ferr)
	}
	return nil
}

// runLock measures one uncontended lock round trip (acquire and release)
// of the same lock file.
func runLock(cfg *config) (*section, error) {
	d, err := os.MkdirTemp(cfg.dir, "lock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(d)
	path := filepath.Join(d, "state.lock")
	names, acquire, closeAll, err := lockRows(path)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	sec := &section{Key: "lock", Title: "Lock round trip, uncontended"}
	byRow := map[*result]func() (func() error, error){}
	for i, name := range names {
		if err := excludes(path, acquire[name]); err != nil {
			return nil, fmt.Errorf("lock: %s: %w", name, err)
		}
		r := &result{Row: benchkit.Row{Name: name, Ref: i == 0}, measured: name == rowLockAcquire || name == rowLockDeep}
		sec.Rows = append(sec.Rows, r)
		byRow[r] = acquire[name]
	}
	ops := cfg.lockOps
	err = sec.Interleave(cfg.rounds, func(r *result) (float64, error) {
		acq := byRow[r]
		var elapsed time.Duration
		err := measure(r, ops, func() error {
			start := time.Now()
			for range ops {
				release, err := acq()
				if err != nil {
					return err
				}
				if err := release(); err != nil {
					return err
				}
			}
			elapsed = time.Since(start)
			return nil
		})
		return float64(elapsed.Nanoseconds()) / float64(ops), err
	})
	return sec, err
}
