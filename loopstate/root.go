package loopstate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/atomicdir"
	"github.com/filetxn/filetxn/internal/osfile"
)

// The files of a loop, in <root>/loops/<name>/.
const (
	StateFile = ".state.loop" // the state: one JSON document, replaced atomically
	LockFile  = ".state.lock" // the lock file: created with the loop, never rewritten, never deleted while the loop exists
	TickLog   = "ticks.jsonl" // the tick log: append-only JSON Lines
	LoopsDir  = "loops"       // the directory of loops under the root
)

// A Root is a directory of loops, <dir>/loops/<name>/. It holds no state in
// memory and is safe for concurrent use.
type Root struct {
	dir  string
	opts []filetxn.Option // the caller's, applied before each loop's own
	now  func() time.Time // time.Now; tests set another
}

// NewRoot returns the Root in dir. It does no I/O: the directory is created
// by the first Create. opts are the engine's options for every change of a
// loop's state and tick log: filetxn.WithoutSync (a power loss may then undo
// the last writes; creating and deleting a loop stay durable),
// filetxn.WithLockOptions (lock.WithWaitReport to hear of a long wait; each
// operation records its own purpose, "pause <name>", "tick <name>", in the
// holder record) and filetxn.WithNoWait. A loop's lock is always its own
// lock file, so a filetxn.WithStateRoot or filetxn.WithLockPath is
// overridden. NewRoot refuses an empty dir, and options that filetxn.NewStore
// refuses, with an error matching ErrInvalid.
func NewRoot(dir string, opts ...filetxn.Option) (*Root, error) {
	if dir == "" {
		return nil, fmt.Errorf("loopstate: NewRoot: empty directory: %w", ErrInvalid)
	}
	if _, err := filetxn.NewStore[*Doc](filepath.Join(dir, StateFile), Codec{}, opts...); err != nil {
		return nil, fmt.Errorf("loopstate: NewRoot %s: %w: %w", dir, ErrInvalid, err)
	}
	return &Root{dir: dir, opts: opts, now: time.Now}, nil
}

func (r *Root) loopDir(name string) string { return filepath.Join(r.dir, LoopsDir, name) }

// loop returns the Loop for a valid name, without I/O.
func (r *Root) loop(name string) *Loop {
	dir := r.loopDir(name)
	return &Loop{root: r, name: name, dir: dir,
		state: filepath.Join(dir, StateFile), lock: filepath.Join(dir, LockFile), log: filepath.Join(dir, TickLog)}
}

// Create creates the loop name from t and returns it. The name is claimed
// atomically: the loop's directory is filled under a hidden temporary name
// (state, empty lock file, empty tick log) and renamed to <name> only if
// that name is free, so of two concurrent creates exactly one succeeds, the
// other gets an error wrapping ErrExists, and nobody ever sees a loop
// without its state. No lock is taken: there is nothing to lock yet.
//
// An invalid name is refused with ErrInvalidName and invalid gates with
// ErrInvalid, before any I/O. Create does not block; ctx is checked once.
func (r *Root) Create(ctx context.Context, name string, t Template) (*Loop, error) {
	d, err := New(name, r.now(), t)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := r.loop(name)
	data, err := Codec{Path: l.state, Name: name}.Encode(d)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(r.dir, LoopsDir), 0o755); err != nil {
		return nil, err
	}
	exists := func() (*Loop, error) { return nil, fmt.Errorf("%w: loop %s (%s)", ErrExists, name, l.dir) }
	pd, err := atomicdir.Create(l.dir, 0o755, true)
	if errors.Is(err, fs.ErrExist) {
		return exists()
	}
	if err != nil {
		return nil, err
	}
	defer pd.Cleanup()
	stage := pd.Path()
	if err := atomicfile.WriteFile(filepath.Join(stage, StateFile), data, 0o644); err != nil {
		return nil, err
	}
	// The lock file and the log are empty: Publish's sync of the directory
	// is all their durability needs.
	if err := atomicfile.WriteFile(filepath.Join(stage, LockFile), nil, 0o600, atomicfile.WithoutSync()); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(stage, TickLog), nil, 0o644, atomicfile.WithoutSync()); err != nil {
		return nil, err
	}
	if err := pd.Publish(); errors.Is(err, fs.ErrExist) {
		return exists()
	} else if err != nil {
		return nil, err
	}
	return l, nil
}

// Open returns the loop name after checking, without a lock, that it
// exists. An invalid name is refused with ErrInvalidName before any I/O; a
// missing loop gives an error wrapping ErrNoLoop. A loop whose state file is
// refused still opens: every operation on it then reports the *StateError.
func (r *Root) Open(ctx context.Context, name string) (*Loop, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	l := r.loop(name)
	data, err := osfile.ReadState(l.state, "Read", nil, 1)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoLoop, name)
	}
	return l, nil
}

// A Listing is one loop of a List: its name and either its state or the
// error that reading it gave.
type Listing struct {
	Name  string
	State *Doc  // nil when Err is set
	Err   error // a *StateError for a state file that is refused
}

// List returns every loop under the root, sorted by name, each with a
// snapshot of its state read without the lock: rename guarantees that each
// snapshot is one whole version, although it may be replaced right after.
// A loop whose state is refused is listed with its error. A root without
// loops gives an empty list. List does not block.
func (r *Root) List(ctx context.Context) ([]Listing, error) {
	ents, err := os.ReadDir(filepath.Join(r.dir, LoopsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Listing
	for _, e := range ents {
		if !e.IsDir() || !validName(e.Name()) {
			continue // staging and tombstone directories are hidden names
		}
		l := r.loop(e.Name())
		d, err := l.View(ctx)
		if errors.Is(err, ErrNoLoop) {
			continue // being deleted
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out = append(out, Listing{Name: e.Name(), State: d, Err: err})
	}
	return out, nil
}
