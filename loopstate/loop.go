package loopstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// A Loop is one loop of a Root: its directory, state file, lock file and tick
// log. It keeps none of the loop's state in memory (every call reads the
// files anew) and is safe for concurrent use. Get one from Root.Create,
// Root.Open or Root.List. Concurrent calls of one operation (two Pauses,
// eight Mutates) on one Loop share a write, as calls of one filetxn.Store
// do: keep the Loop rather than opening it again for each call. Calls of
// different operations, or through different Loop values, never share one.
//
// Every method that changes the state takes the loop's lock (waiting as long
// as ctx allows), reads the state, checks its guard on what it read, writes
// the state atomically if it changed, and releases the lock. A loop deleted
// meanwhile (and perhaps created again) gives an error matching
// filetxn.ErrNotFound; while a tick whose runner lost its lock file still
// runs, one matching lock.ErrLockLost (see Mutate). A wait ended by ctx
// returns a *lock.BusyError naming the lock file and its holder; a done ctx
// tries the lock once, and once it is held stops nothing, on files as on a
// backend. Such a method called from inside a Mutate callback on
// the same loop returns an error matching lock.ErrReentrant; CheckGate and
// SetSchedule, when they change nothing, answer from the file as last
// written.
type Loop struct {
	membership // a member of filetxn.MutateAll, through engine("commit")
	root       *Root
	name       string
	dir        string
	state      string // dir/.state.loop
	lock       string // dir/.state.lock
	log        string // dir/ticks.jsonl

	mu     sync.Mutex                        // protects stores
	stores map[storeKey]*filetxn.Store[*Doc] // the engine's stores of the state file, built on first use
}

// storeKey names one of a Loop's engine stores: the lock's purpose is a
// store's option, so each operation has its own store, and so its own group
// commit.
type storeKey struct {
	op     string // the operation, recorded as the lock's purpose "<op> <name>"
	noWait bool   // a busy lock fails at once
}

// Name returns the loop's name.
func (l *Loop) Name() string { return l.name }

// membership makes a Loop a filetxn.Member.
type membership = filetxn.Membership

// commitOp is the operation, and the lock's purpose, of a loop's state in a
// filetxn.MutateAll.
const commitOp = "commit"

// In returns the loop's state in m, for the fn of a filetxn.MutateAll that
// has l among its members: read under the loop's lock, changed in place
// (fields, as in Mutate), and published with the other members' changes or
// not at all, updated_at set when it changed. As in Mutate, a loop whose
// tick's runner still runs after losing its lock file fails the MutateAll
// before fn runs (ErrTickInProgress), and a missing loop gives
// filetxn.ErrNotFound. It panics if l is not a member of m, or if m's fn
// has returned.
func (l *Loop) In(m *filetxn.Multi) *Doc { return filetxn.In(m, l.engine(commitOp, false)) }

// join returns the loop's membership: its state, refused while a tick's
// runner that lost its lock file still runs, stamped when changed.
func (l *Loop) join() membership {
	return filetxn.Join(l.engine(commitOp, false),
		func(d *Doc) error { return l.runnerBusy(commitOp, d.current) },
		func(d *Doc) { d.UpdatedAt = l.now() })
}

// LockPath returns the path of the loop's lock file,
// <root>/loops/<name>/.state.lock, for lock.ReadHolder or a lock the caller
// takes by hand. Its directory is the loop's, which holds the state
// (.state.loop) and the tick log (ticks.jsonl) too. On a backend it names
// the loop's lock there (docs/formats/loopstate.md), and no file.
func (l *Loop) LockPath() string { return l.lock }

// Backend returns the backend the loop is kept on (filetxn.WithBackend
// given to NewRoot), or nil for a loop kept in files. It does no I/O.
func (l *Loop) Backend() filetxn.Backend { return l.root.b }

func (l *Loop) now() time.Time { return stamp(l.root.now()) }

// engine returns the filetxn store of the state file that records op as
// the lock's purpose; with noWait a busy lock fails at once. It is built on
// the first call for op and kept, so that concurrent calls of op share a
// write (group commit).
func (l *Loop) engine(op string, noWait bool) *filetxn.Store[*Doc] {
	k := storeKey{op, noWait}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.stores[k]; s != nil {
		return s
	}
	opts := append(append([]filetxn.Option(nil), l.root.opts...),
		filetxn.WithLockPath(l.lock), filetxn.WithLockOptions(lock.WithPurpose(op+" "+l.name), lock.WithoutCreate()))
	if noWait {
		opts = append(opts, filetxn.WithNoWait())
	}
	s, err := filetxn.NewStore[*Doc](l.state, l.codec(), opts...)
	if err != nil { // the loop's own paths and options: never invalid
		panic("loopstate: " + err.Error())
	}
	if l.stores == nil {
		l.stores = make(map[storeKey]*filetxn.Store[*Doc])
	}
	l.stores[k] = s
	return s
}

// locked runs fn with the loop's lock held, through filetxn's Store.Locked,
// after checking that the lock file is still the loop's. It serves the
// operations that change more than the state file under one lock: Tick
// (the state and the tick log, with the harness run in between) and Delete
// (the loop's directory); a change of the state alone is mutate's, the
// engine's Mutate. A loop deleted before the lock is taken has no
// lock file, and the lock is not taken (lock.WithoutCreate): a late caller
// gets filetxn.ErrNotFound and never brings the deleted loop's directory
// back. One deleted while the caller waits gives filetxn.ErrNotFound.
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
	if l.root.b != nil {
		return l.engine(op, noWait).Locked(ctx, fn) // a lock that no file holds: nothing to check
	}
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
			if err := l.sameDir(dir0); err != nil {
				return err
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
					return l.missing()
				}
				stale = true
				return fmt.Errorf("loopstate: lock file %s deleted or replaced while held: %w", l.lock, lock.ErrLockLost)
			}
			return fn(tx)
		})
		switch {
		case stale:
			continue
		case !held && l.lockMissing(err):
			if dir0 == nil {
				dir0 = statDir(l.dir)
			}
			if err := l.restoreLock(); err != nil {
				return err
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
// returns nil when a lock file is there now (made by this call or by a
// racing one), and the error of a missing loop (l.missing) when there is
// no loop.
func (l *Loop) restoreLock() error {
	data, err := fsys.ReadState(l.state, "Read", nil, 1)
	if err != nil {
		return err
	}
	if data == nil {
		return l.missing()
	}
	f, err := fsys.OpenFile(l.lock, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return l.missing() // the loop was deleted after the read
	case err != nil:
		return err
	}
	return f.Close()
}

// read reads and decodes the state under the lock. A state it refuses gives
// the *filetxn.FormatError inside an *fs.PathError naming the state file,
// as the engine reports it.
func (l *Loop) read(tx *filetxn.Tx) (*Doc, []byte, error) {
	data, err := tx.Read(l.state)
	if err != nil {
		return nil, nil, err
	}
	return l.decodeState(data)
}

// decodeState returns the state that data, the bytes of the loop's state
// read under its lock, holds, and data; nil data is a missing loop.
func (l *Loop) decodeState(data []byte) (*Doc, []byte, error) {
	if data == nil {
		return nil, nil, l.missing()
	}
	d, err := l.codec().Decode(data)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "Decode", Path: l.state, Err: err}
	}
	return d, data, nil
}

// codec returns the codec of the loop's state file.
func (l *Loop) codec() codec { return codec{path: l.state, name: l.name} }

// missing returns the error of a loop whose state file is not there.
func (l *Loop) missing() error { return notFound(l.name, l.state+" does not exist") }

// notFound returns the error, matching filetxn.ErrNotFound, of the loop
// name that is not there; what says how.
func notFound(name, what string) error {
	return fmt.Errorf("loopstate: no loop %s: %s: %w", name, what, filetxn.ErrNotFound)
}

// pathError wraps in an *fs.PathError naming the state file, with op, a
// *filetxn.FormatError that a transition returned (a change the format
// cannot hold), as the engine wraps its codec's; it returns any other error
// as it is.
func (l *Loop) pathError(op string, err error) error {
	var (
		fe *filetxn.FormatError
		pe *fs.PathError
	)
	if errors.As(err, &fe) && !errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: l.state, Err: err}
	}
	return err
}

// tombstone renames the loop's directory to a hidden name (never a valid
// loop name) and returns it.
func (l *Loop) tombstone() (string, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	tomb := filepath.Join(filepath.Dir(l.dir), "."+l.name+".deleted-"+hex.EncodeToString(rnd[:]))
	return tomb, fsys.RenameNoReplace(l.dir, tomb, true)
}

// tombstoneMark is what a tombstone's name has between the loop's name and
// its random part.
const tombstoneMark = ".deleted-"

// isTombstone reports whether name is one of tombstone's names: "." + a
// valid loop name + ".deleted-" + 12 lower-case hex digits.
func isTombstone(name string) bool {
	i := strings.LastIndex(name, tombstoneMark)
	if i < 1 || name[0] != '.' || !validName(name[1:i]) {
		return false
	}
	rnd := name[i+len(tombstoneMark):]
	if len(rnd) != 12 {
		return false
	}
	for _, c := range []byte(rnd) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// removeTombstones removes, best effort, every tombstone in the loops
// directory: a Delete killed between its rename and its removal leaves
// one, which nothing else would ever remove. A tombstone is a loop deleted
// already, never visible by a loop's path, so removing one that a live
// Delete is removing too is no harm.
func (r *Root) removeTombstones() {
	dir := filepath.Join(r.dir, loopsDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && isTombstone(e.Name()) {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// Mutate runs fn on the loop's state under its lock, through filetxn's
// Store.Mutate: it waits for the lock (or ctx), reads and decodes the state,
// calls fn once, and if the state changed sets updated_at and replaces the
// file atomically. If fn returns an error nothing is written and the error
// is returned unchanged; a state that breaks an invariant after fn is not
// written either (a *filetxn.FormatError, inside an *fs.PathError naming
// the state file). A panic in fn releases the lock and
// propagates. Commit reports what was written, as filetxn's does.
//
// While current_tick names a tick whose runner still runs (a live process
// with its pid and start time), a caller that holds the loop's lock holds
// it only because the runner's lock file was removed or replaced under the
// runner, which will record its tick once it holds the lock again: then
// Mutate, every transition and Delete refuse, before fn runs and writing
// nothing, with an error matching lock.ErrLockLost and ErrTickInProgress
// that names the runner's pid and tick. A harness to which the runner
// handed its lock shares it and is not refused.
//
// N changes in one fn cost one lock, one read and one write.
func (l *Loop) Mutate(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	if fn == nil {
		return filetxn.Commit{}, fmt.Errorf("loopstate: Mutate %s: nil fn: %w", l.name, filetxn.ErrInvalidArgument)
	}
	return l.mutate(ctx, "mutate", false, func(d *Doc, now time.Time) error {
		if err := fn(d); err != nil {
			return err
		}
		if _, changed := d.encode(); changed {
			d.UpdatedAt = now
		}
		return nil
	})
}

// mutate runs fn as Mutate does, recording op as the lock's purpose, with
// the time that stamps the change (read when fn runs; the transitions set
// updated_at themselves, and Mutate when fn changed anything); with probe it is
// filetxn's MutateProbed, so that a call whose fn (a pure decision) changes
// nothing never waits for the lock.
//
// The directory's identity before the call tells a loop deleted (and
// perhaps created again) while the caller waited from the loop it asked
// for: lock.Acquire takes the lock on whatever file is at the path when it
// gets it. A loop whose lock file alone is missing (someone removed it; the
// state is still there) gets it back (restoreLock), and the call is made
// again: it did not run, since the lock was not taken.
//
// A state whose current_tick names a runner that still runs, and whose
// lock the caller does not share, is refused before fn runs (runnerBusy):
// the caller holds the lock only because the runner's lock file was
// removed or replaced under it, and the runner will record its tick once
// it holds the lock again. A runner found dying is waited for, and the
// call made again.
func (l *Loop) mutate(ctx context.Context, op string, probe bool, fn func(d *Doc, now time.Time) error) (filetxn.Commit, error) {
	var dir0 os.FileInfo // on a backend, no directory: a Delete removes the state, which the engine reads as missing
	if l.root.b == nil {
		dir0 = statDir(l.dir)
	}
	step := func(d *Doc) error {
		if err := l.sameDir(dir0); err != nil {
			return err
		}
		if err := l.runnerBusy(op, d.current); err != nil {
			return err
		}
		return fn(d, l.now())
	}
	s := l.engine(op, false)
	for restored, waited := false, false; ; {
		var c filetxn.Commit
		var err error
		if probe {
			c, err = s.MutateProbed(ctx, step)
		} else {
			c, err = s.Mutate(ctx, step)
		}
		if !waited && waitDying(err) {
			waited = true
			continue
		}
		if restored || !l.lockMissing(err) {
			return c, codecError(err)
		}
		restored = true
		if dir0 == nil {
			dir0 = statDir(l.dir)
		}
		if err := l.restoreLock(); err != nil {
			return c, err
		}
	}
}

// sameDir returns an error matching filetxn.ErrNotFound when the loop's directory is
// gone or is another one than dir0 (nil: nothing to compare).
func (l *Loop) sameDir(dir0 os.FileInfo) error {
	if dir0 == nil {
		return nil
	}
	fi, err := os.Stat(l.dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(dir0, fi) {
		return notFound(l.name, l.dir+" was deleted while waiting for its lock")
	}
	return err
}

// lockMissing reports whether err is the engine's failure to take the lock
// because the loop's lock file does not exist (lock.WithoutCreate).
func (l *Loop) lockMissing(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Op == "Acquire" && pe.Path == l.lock && errors.Is(pe.Err, fs.ErrNotExist)
}

// codecError returns the error the engine reports: the *fs.PathError of its
// Decode or Encode step, naming the state file around the codec's
// *filetxn.FormatError, as it is, and the error of a missing state, which
// names the loop and the file itself, without it.
func codecError(err error) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Op == "Decode" && errors.Is(pe.Err, filetxn.ErrNotFound) {
		return pe.Err
	}
	return err
}

// View reads the state without the lock. It sees one whole version (the
// file is only ever replaced by rename), which may be replaced right after:
// decide under Mutate. A refused state gives its *filetxn.FormatError inside
// an *fs.PathError naming the state file; a missing one an error matching
// filetxn.ErrNotFound. It does not block (on a backend: one request,
// bounded by ctx).
func (l *Loop) View(ctx context.Context) (*Doc, error) {
	d, err := l.engine("view", false).View(ctx)
	return d, codecError(err)
}

// Pause pauses a running loop, recording by and reason: its status becomes
// paused, with pause.at, pause.by and pause.reason; the schedule is left
// alone, and scheduled ticks skip until Resume. A loop that is not running
// is refused with a *GuardError (a pause must not hide a halt). by and
// reason are at most 4096 bytes each (else an error matching
// filetxn.ErrInvalidArgument, before any I/O). It is Doc.Pause under the
// loop's lock.
func (l *Loop) Pause(ctx context.Context, by, reason string) error {
	if err := errors.Join(checkText("Pause", "by", by), checkText("Pause", "reason", reason)); err != nil {
		return err
	}
	_, err := l.mutate(ctx, "pause", true, func(d *Doc, now time.Time) error { return d.Pause(now, by, reason) })
	return err
}

// Resume moves a paused loop back to running; resumed_count is unchanged.
// A loop that is not paused is refused with a *GuardError: only Approve
// releases a halt. It is Doc.Resume under the loop's lock.
func (l *Loop) Resume(ctx context.Context) error {
	_, err := l.mutate(ctx, "resume", true, func(d *Doc, now time.Time) error { return d.Resume(now) })
	return err
}

// Approve releases a halted loop: it runs again, resumed_count goes up by
// one, consecutive_failures is reset, last_approval records by, note and the
// tick, and a new gate window opens at the current tick_count and spent, so
// that the gate that halted the loop is not still over its threshold. A loop
// that is not halted is refused with a *GuardError. by and note are at most
// 4096 bytes each (else an error matching filetxn.ErrInvalidArgument, before
// any I/O). A resumed_count at the largest value the format holds is
// refused with a *filetxn.FormatError naming it, and nothing is written.
// It is Doc.Approve under the loop's lock.
func (l *Loop) Approve(ctx context.Context, by, note string) error {
	if err := errors.Join(checkText("Approve", "by", by), checkText("Approve", "note", note)); err != nil {
		return err
	}
	_, err := l.mutate(ctx, "approve", true, func(d *Doc, now time.Time) error { return d.Approve(now, by, note) })
	return l.pathError("Encode", err)
}

// CheckGate is check-gate: may the loop's work go on? It returns nil when
// the loop is running and no gate trips; then it writes nothing and never
// waits for the lock (when the lock is busy or cannot be taken it decides
// on a lock-free snapshot, as filetxn's MutateProbed does).
// When a gate trips it halts the loop, under the lock, with every tripped
// gate in halt.gates and their reasons in halt.reason, and returns a
// *GuardError with Status Halted that gives the reasons; on a loop halted
// already it returns the same, and on a paused one a *GuardError with
// Status Paused, writing nothing. Run from a tick's harness (a child
// process that was handed the lock), it borrows the runner's lock instead
// of waiting for it.
func (l *Loop) CheckGate(ctx context.Context) error {
	var res error
	_, err := l.mutate(ctx, "check-gate", true, func(d *Doc, now time.Time) error {
		res = nil
		gates, err := d.checkGates(now)
		if err != nil {
			return err
		}
		if len(gates) > 0 {
			res = &GuardError{Status: Halted, loop: l.name, op: "check-gate", reason: d.Halted.Reason}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return res
}

// SetSchedule turns the automatic trigger on or off: with it off, a
// TriggerSchedule tick is skipped. Status is left alone, and no tick-log
// line is written. Setting it as it is writes nothing and never waits for
// the lock, as CheckGate.
func (l *Loop) SetSchedule(ctx context.Context, enabled bool) error {
	op := "disable-schedule"
	if enabled {
		op = "enable-schedule"
	}
	_, err := l.mutate(ctx, op, true, func(d *Doc, now time.Time) error { d.setSchedule(now, enabled); return nil })
	return err
}

// Delete deletes the loop: under its lock, the loop's directory is renamed
// to a hidden tombstone, then removed after the lock is released. A process
// that was waiting for the lock finds, once it gets it, that its lock file
// is no longer the loop's and gets filetxn.ErrNotFound; the lock file itself is never
// deleted while anyone can still find it by the loop's path. An error from
// removing the tombstone is returned, but the loop is deleted by then. A
// Delete killed between the rename and the removal leaves the tombstone, a
// hidden directory that no method reads; the next Delete or Create under
// the root removes it, and any other left so. A
// directory that holds a lock file but no state (not a loop: the other
// methods give filetxn.ErrNotFound) is removed the same way, and Delete
// returns an error matching filetxn.ErrNotFound. A loop whose tick's runner
// still runs after its lock file was removed or replaced is not deleted,
// as no transition changes it (see Mutate): the runner records its tick
// first.
func (l *Loop) Delete(ctx context.Context) error {
	if l.root.b != nil {
		return l.remoteDelete(ctx)
	}
	var tomb string
	var missing error
	del := func(tx *filetxn.Tx) error {
		data, err := tx.Read(l.state)
		if err != nil {
			return err
		}
		if data == nil {
			missing = l.missing()
		} else if d, err := l.codec().Decode(data); err == nil {
			// A state that is refused is deleted all the same.
			if err := l.runnerBusy("delete", d.current); err != nil {
				return err
			}
		}
		// The rename is this package's one write under the lock that is not
		// the engine's: check, as the engine does before it publishes, that
		// the lock held is still the loop's.
		_ = seam.At(seam.Check, l.state)
		if current, err := tx.Lock().Current(); err != nil {
			return err
		} else if !current {
			return fmt.Errorf("loopstate: lock file %s deleted or replaced while held: %w", l.lock, lock.ErrLockLost)
		}
		tomb, err = l.tombstone()
		return err
	}
	err := l.locked(ctx, "delete", false, del)
	if waitDying(err) {
		err = l.locked(ctx, "delete", false, del)
	}
	if err != nil {
		return err
	}
	err = os.RemoveAll(tomb)
	l.root.removeTombstones() // those of Deletes killed before their removal
	if err != nil {
		return err
	}
	return missing
}

// Ticks returns the tick log, read without the lock, skipping lines that do
// not parse (a crash can leave a partial last line). It does not block (on
// a backend: two requests, bounded by ctx, see docs/formats/loopstate.md). A
// loop that has no state (deleted, or never a loop) gives an error matching
// filetxn.ErrNotFound, as View does, not an empty log.
func (l *Loop) Ticks(ctx context.Context) ([]TickRecord, error) {
	if l.root.b != nil {
		return l.remoteTicks(ctx)
	}
	data, err := fsys.ReadState(l.log, "Read", nil, 1)
	if err != nil {
		return nil, err
	}
	// os.Stat, not Lstat: a link whose target is gone is no state, for View.
	if _, err := os.Stat(l.state); errors.Is(err, fs.ErrNotExist) {
		return nil, l.missing()
	}
	return parseLog(data), nil
}
