package loopstate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/atomicdir"
	"github.com/filetxn/filetxn/internal/osfile"
	"github.com/filetxn/filetxn/internal/txhook"
	"github.com/filetxn/filetxn/lock"
)

// A Loop is one loop of a Root: its directory, state file, lock file and tick
// log. It holds no state in memory (every call reads the files anew) and is
// safe for concurrent use. Get one from Root.Create or Root.Open.
//
// Every method that changes the state takes the loop's lock (waiting as long
// as ctx allows), checks that the lock file it holds is still the loop's
// (the loop may have been deleted meanwhile: ErrDeleted), reads the state,
// checks its guard on what it read, writes the state atomically if it
// changed, and releases the lock. A wait ended by ctx returns a
// *lock.BusyError naming the lock file and its holder; a ctx that is
// already done tries the lock once. Nothing read before the lock is used to
// decide. Calling a method from inside a Mutate callback on the same loop
// returns an error matching lock.ErrReentrant instead of deadlocking.
type Loop struct {
	root  *Root
	name  string
	dir   string
	state string // dir/.state.loop
	lock  string // dir/.state.lock
	log   string // dir/ticks.jsonl
}

// Name returns the loop's name.
func (l *Loop) Name() string { return l.name }

// Dir returns the loop's directory, <root>/loops/<name>.
func (l *Loop) Dir() string { return l.dir }

// LockPath returns the path of the lock file.
func (l *Loop) LockPath() string { return l.lock }

func (l *Loop) now() time.Time { return stamp(l.root.now()) }

// engine returns the filetxn store of the state file, recording op as the
// lock's purpose; with noWait a busy lock fails at once.
func (l *Loop) engine(op string, noWait bool) *filetxn.Store[*Doc] {
	opts := append(append([]filetxn.Option(nil), l.root.opts...),
		filetxn.WithLockPath(l.lock), filetxn.WithLockOptions(lock.WithPurpose(op+" "+l.name), lock.WithoutCreate()))
	if noWait {
		opts = append(opts, filetxn.WithNoWait())
	}
	s, err := filetxn.NewStore[*Doc](l.state, Codec{Path: l.state, Name: l.name}, opts...)
	if err != nil { // the loop's own paths and options: never invalid
		panic("loopstate: " + err.Error())
	}
	return s
}

// locked runs fn with the loop's lock held, after checking that the lock
// file is still the loop's. A loop deleted before the lock is taken has no
// lock file, and the lock is not taken (lock.WithoutCreate): a late caller
// gets ErrNoLoop and never brings the deleted loop's directory back. One
// deleted while the caller waits gives ErrDeleted.
//
// A loop whose lock file alone is missing (someone removed it; the state is
// still there) gets it back: locked creates it, only if the state file is
// there and without creating any directory, and takes the lock on it. That
// is safe because every holder of the removed file re-checks, before each
// write, that its lock file is still the one at the path, and publishes
// nothing once it is not (lock.ErrLockLost). Likewise a lock taken on a file
// that was replaced meanwhile, while the state is still there, is taken
// again on the file now at the path.
func (l *Loop) locked(ctx context.Context, op string, noWait bool, fn func(tx *filetxn.Tx) error) error {
	// The directory's identity before the wait tells a loop deleted (and
	// perhaps created again) while the caller waited from one whose lock file
	// alone was replaced: lock.Acquire takes the lock on whatever file is at
	// the path when it gets it.
	dir0 := statDir(l.dir)
	var err error
	for range 3 {
		held, stale := false, false
		err = l.engine(op, noWait).Locked(ctx, func(tx *filetxn.Tx) error {
			held = true
			if dir0 != nil {
				fi, err := os.Stat(l.dir)
				if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(dir0, fi) {
					return fmt.Errorf("%w: %s", ErrDeleted, l.name)
				}
				if err != nil {
					return err
				}
			}
			current, err := tx.Lock().Current()
			if err != nil {
				return err
			}
			if !current {
				data, err := tx.Read(l.state)
				if err != nil {
					return err
				}
				if data == nil {
					return fmt.Errorf("%w: %s", ErrDeleted, l.name)
				}
				stale = true
				return fmt.Errorf("%w: %s", lock.ErrLockLost, l.lock)
			}
			return fn(tx)
		})
		switch {
		case stale:
			continue
		case !held && errors.Is(err, fs.ErrNotExist):
			if dir0 == nil {
				dir0 = statDir(l.dir)
			}
			restored, rerr := l.restoreLock(ctx)
			if rerr != nil {
				return rerr
			}
			if !restored {
				return fmt.Errorf("%w: %s", ErrNoLoop, l.name)
			}
			continue
		}
		return err
	}
	return err
}

// statDir returns os.Stat(dir) for a later os.SameFile, nil if it fails. On
// Windows os.Stat leaves the file id to be read by path at the first
// os.SameFile, which would then read the directory that has the name by
// that time: a loop deleted and created again would look like the same
// one. statDir has the id read at once.
func statDir(dir string) os.FileInfo {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	os.SameFile(fi, fi)
	return fi
}

// restoreLock creates the loop's missing lock file, exclusively and only
// in the loop's existing directory, if the loop's state file is there. It
// reports whether a lock file is there now (made by this call or by a
// racing one); false means that there is no loop.
func (l *Loop) restoreLock(ctx context.Context) (bool, error) {
	data, err := osfile.ReadState(l.state, "Read", nil, 1)
	if err != nil || data == nil {
		return false, err
	}
	f, err := osfile.OpenFile(l.lock, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil // the loop was deleted after the read
	case err != nil:
		return false, err
	}
	return true, f.Close()
}

// read reads and decodes the state under the lock.
func (l *Loop) read(tx *filetxn.Tx) (*Doc, []byte, error) {
	data, err := tx.Read(l.state)
	if err != nil {
		return nil, nil, err
	}
	if data == nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoLoop, l.name)
	}
	d, err := Codec{Path: l.state, Name: l.name}.Decode(data)
	return d, data, err
}

// tombstone renames the loop's directory to a hidden name (never a valid
// loop name) and returns it.
func (l *Loop) tombstone() (string, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	tomb := filepath.Join(filepath.Dir(l.dir), "."+l.name+".deleted-"+hex.EncodeToString(rnd[:]))
	return tomb, atomicdir.RenameNoReplace(l.dir, tomb, true)
}

// Mutate runs fn on the loop's state under its lock, like filetxn's
// Store.Mutate: it waits for the lock (or ctx), checks that the loop has not
// been deleted, reads and decodes the state, calls fn once, and if the state
// changed sets updated_at and replaces the file atomically. If fn returns an
// error nothing is written and the error is returned unchanged; a state that
// breaks an invariant after fn is not written either (a *StateError). A
// panic in fn releases the lock and propagates. Commit reports what was
// written, as filetxn's does.
//
// N changes in one fn cost one lock, one read and one write. The transitions
// of *Doc are meant to be called here.
func (l *Loop) Mutate(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	return l.mutate(ctx, "mutate", fn)
}

func (l *Loop) mutate(ctx context.Context, op string, fn func(*Doc) error) (filetxn.Commit, error) {
	var c filetxn.Commit
	err := l.locked(ctx, op, false, func(tx *filetxn.Tx) error {
		d, data, err := l.read(tx)
		if err != nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
		codec := Codec{Path: l.state, Name: l.name}
		out, err := codec.Encode(d)
		if err != nil || bytes.Equal(out, data) {
			return err
		}
		if now := l.now(); !d.UpdatedAt.Equal(now) {
			d.UpdatedAt = now
			if out, err = codec.Encode(d); err != nil {
				return err
			}
		}
		c, err = tx.Write(l.state, out)
		return err
	})
	return c, err
}

// View reads the state without the lock. It sees one whole version (the
// file is only ever replaced by rename), which may be replaced right after:
// decide under Mutate. A refused state gives its *StateError; a missing one
// an error wrapping ErrNoLoop. It does not block.
func (l *Loop) View(ctx context.Context) (*Doc, error) {
	d, err := l.engine("view", false).View(ctx)
	var pe *fs.PathError
	if err != nil && errors.As(err, &pe) && pe.Op == "Decode" {
		err = pe.Err
	}
	return d, err
}

// Pause pauses a running loop, recording by and reason (see [Doc.Pause]). A
// paused or halted loop is refused with a *GuardError wrapping ErrNotRunning.
func (l *Loop) Pause(ctx context.Context, by, reason string) error {
	if err := errors.Join(checkText("by", by), checkText("reason", reason)); err != nil {
		return err
	}
	_, err := l.mutate(ctx, "pause", func(d *Doc) error { return d.Pause(l.now(), by, reason) })
	return err
}

// Resume resumes a paused loop (see [Doc.Resume]). A running or halted loop is
// refused with a *GuardError wrapping ErrNotPaused; only Approve releases a
// halt.
func (l *Loop) Resume(ctx context.Context) error {
	_, err := l.mutate(ctx, "resume", func(d *Doc) error { return d.Resume(l.now()) })
	return err
}

// Approve releases a halted loop and opens a new gate window (see
// [Doc.Approve]). A loop that is not halted is refused with a *GuardError
// wrapping ErrNotHalted.
func (l *Loop) Approve(ctx context.Context, by, note string) error {
	if err := errors.Join(checkText("by", by), checkText("note", note)); err != nil {
		return err
	}
	_, err := l.mutate(ctx, "approve", func(d *Doc) error { return d.Approve(l.now(), by, note) })
	return err
}

// CheckGate is check-gate, under the lock. On a running loop it evaluates
// the gates and returns nil if none trips, or halts the loop and returns an
// error matching ErrHalted that gives every tripped gate's reason. On a
// halted loop it returns such an error too, and on a paused one a
// *GuardError wrapping ErrPaused, writing nothing. Run from a tick's
// harness (a child process that was handed the lock), it borrows the
// runner's lock instead of waiting for it.
func (l *Loop) CheckGate(ctx context.Context) error {
	var res error
	_, err := l.mutate(ctx, "check-gate", func(d *Doc) error {
		gates, err := d.CheckGates(l.now())
		switch {
		case err != nil:
			res = err
		case len(gates) > 0:
			res = &haltedError{loop: l.name, reason: d.Halted.Reason}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return res
}

// EnableSchedule turns the automatic trigger on (see [Doc.EnableSchedule]). It
// takes the lock, re-reads and writes only if something changes; status is
// left alone and no tick-log line is written.
func (l *Loop) EnableSchedule(ctx context.Context) error {
	_, err := l.mutate(ctx, "enable-schedule", func(d *Doc) error { d.EnableSchedule(l.now()); return nil })
	return err
}

// DisableSchedule turns the automatic trigger off (see [Doc.DisableSchedule]), as
// EnableSchedule.
func (l *Loop) DisableSchedule(ctx context.Context) error {
	_, err := l.mutate(ctx, "disable-schedule", func(d *Doc) error { d.DisableSchedule(l.now()); return nil })
	return err
}

// Delete deletes the loop: under its lock, the loop's directory is renamed
// to a hidden tombstone, then removed after the lock is released. A process
// that was waiting for the lock finds, once it gets it, that its lock file
// is no longer the loop's and gets ErrDeleted; the lock file itself is never
// deleted while anyone can still find it by the loop's path. An error from
// removing the tombstone is returned, but the loop is deleted by then. A
// directory that holds a lock file but no state (not a loop: the other
// methods give ErrNoLoop) is removed the same way, and Delete returns an
// error wrapping ErrNoLoop.
func (l *Loop) Delete(ctx context.Context) error {
	var tomb string
	var missing error
	err := l.locked(ctx, "delete", false, func(tx *filetxn.Tx) error {
		data, err := tx.Read(l.state)
		if err != nil {
			return err
		}
		if data == nil {
			missing = fmt.Errorf("%w: %s", ErrNoLoop, l.name)
		}
		// The rename is this package's one write under the lock that is not
		// the engine's: check, as the engine does before it publishes, that
		// the lock held is still the loop's.
		txhook.From(ctx).Call(txhook.Check)
		if current, err := tx.Lock().Current(); err != nil {
			return err
		} else if !current {
			return fmt.Errorf("%w: %s", lock.ErrLockLost, l.lock)
		}
		tomb, err = l.tombstone()
		return err
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(tomb); err != nil {
		return err
	}
	return missing
}

// Ticks returns the tick log, read without the lock, skipping lines that do
// not parse (a crash can leave a partial last line). It does not block.
func (l *Loop) Ticks(ctx context.Context) ([]TickRecord, error) {
	data, err := osfile.ReadState(l.log, "Read", nil, 1)
	if err != nil {
		return nil, err
	}
	return parseLog(data), nil
}
