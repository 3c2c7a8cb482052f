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
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/loopnames"
)

// The files of a loop, in <root>/loops/<name>/ (docs/formats/loopstate.md
// in the repository specifies them).
const (
	stateFile = loopnames.State   // the state: one JSON document, replaced atomically
	lockFile  = loopnames.Lock    // the lock file: created with the loop, never rewritten, never deleted while the loop exists
	tickLog   = loopnames.TickLog // the tick log: append-only JSON Lines
	loopsDir  = loopnames.Loops   // the directory of loops under the root
)

// A Root is a directory of loops, <dir>/loops/<name>/. It holds no state in
// memory and is safe for concurrent use.
type Root struct {
	dir  string
	b    filetxn.Backend  // the backend the loops are kept in (filetxn.WithBackend), nil for files
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
// overridden. With filetxn.WithBackend(b) the loops are documents of b,
// named from dir (docs/formats/loopstate.md), with the same operations and
// errors; a tick's line and its state are published in one commit, the
// loop's lock is b's and is the runner's liveness, and a harness gets no
// lock to hand over (Run.Lock is nil). NewRoot refuses an empty dir, and
// options that filetxn.NewStore refuses, with an error matching
// filetxn.ErrInvalidArgument.
func NewRoot(dir string, opts ...filetxn.Option) (*Root, error) {
	if dir == "" {
		return nil, fmt.Errorf("loopstate: NewRoot: empty directory: %w", filetxn.ErrInvalidArgument)
	}
	st, err := filetxn.NewStore[*Doc](filepath.Join(dir, stateFile), codec{}, opts...)
	if err != nil {
		return nil, fmt.Errorf("loopstate: NewRoot %s: %w", dir, err) // err matches filetxn.ErrInvalidArgument
	}
	return &Root{dir: dir, b: st.Backend(), opts: opts, now: time.Now}, nil
}

func (r *Root) loopDir(name string) string { return filepath.Join(r.dir, loopsDir, name) }

// loop returns the Loop for a valid name, without I/O.
func (r *Root) loop(name string) *Loop {
	dir := r.loopDir(name)
	l := &Loop{root: r, name: name, dir: dir,
		state: filepath.Join(dir, stateFile), lock: filepath.Join(dir, lockFile), log: filepath.Join(dir, tickLog)}
	l.membership = l.join()
	return l
}

// Create creates the loop name and returns it. Its state starts running,
// with counters at zero, no gates, the schedule off and the gate window
// opened now; fn, unless nil, sets what the loop starts with, as in Mutate
// (Template, Gates, Schedule; Status Paused with a Paused record to create
// it paused, so that no scheduled tick runs first). The name is claimed
// atomically: of two concurrent Creates exactly one succeeds, the other gets
// an error matching fs.ErrExist, and nobody sees a loop without its state.
// No lock is taken; in files Create does not block and checks ctx once. On
// a backend it is one request, bounded by ctx, and an error other than
// fs.ErrExist may leave the loop created or not (Open tells). A name
// Windows reserves for a device (con, prn, aux, nul, com0 to com9, lpt0 to
// lpt9) is refused on every system, so that a loop can move between them;
// Open and List still accept one. An invalid name, an error from fn
// (returned unchanged) and a state fn leaves invalid (ErrInvalidArgument,
// naming the key) create nothing, before any I/O. If only the fsync of the
// loops directory fails, the loop exists (a power loss may undo it), the
// error says so and a retry finds it. A Create killed before its rename
// leaves a hidden staging directory, ".<name>.tmp-<random>" in the loops
// directory, that nothing reads or removes: remove it by hand. Once the loop
// is created, Create removes the tombstones killed Deletes left (Loop.Delete).
func (r *Root) Create(ctx context.Context, name string, fn func(*Doc) error) (*Loop, error) {
	_, data, err := initial(name, r.now(), fn)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := r.loop(name)
	if r.b != nil {
		if err := l.remoteCreate(ctx, data); err != nil {
			return nil, err
		}
		return l, nil
	}
	if err := os.MkdirAll(filepath.Join(r.dir, loopsDir), 0o755); err != nil {
		return nil, err
	}
	exists := func() (*Loop, error) {
		return nil, fmt.Errorf("loopstate: Create: loop %s exists (%s): %w", name, l.dir, fs.ErrExist)
	}
	pd, err := fsys.CreateDir(l.dir, 0o755, true)
	if errors.Is(err, fs.ErrExist) {
		return exists()
	}
	if err != nil {
		return nil, err
	}
	defer pd.Cleanup()
	stage := pd.Path()
	if err := atomicfile.WriteFile(filepath.Join(stage, stateFile), data, 0o644); err != nil {
		return nil, err
	}
	// The lock file and the log are empty: Publish's sync of the directory
	// is all their durability needs.
	if err := atomicfile.WriteFile(filepath.Join(stage, lockFile), nil, 0o600, atomicfile.WithoutSync()); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(stage, tickLog), nil, 0o644, atomicfile.WithoutSync()); err != nil {
		return nil, err
	}
	if err := pd.Publish(); errors.Is(err, fs.ErrExist) {
		return exists()
	} else if err != nil {
		return nil, err
	}
	r.removeTombstones() // those of Deletes killed before their removal
	return l, nil
}

// Open returns the loop name after checking, without a lock, that it
// exists. An invalid name is refused with an error matching
// filetxn.ErrInvalidArgument before any I/O; a missing loop gives an error
// matching filetxn.ErrNotFound. A loop whose state file is refused still
// opens: every operation on it then reports the *filetxn.FormatError.
func (r *Root) Open(ctx context.Context, name string) (*Loop, error) {
	if err := checkName("Open", name); err != nil {
		return nil, err
	}
	l := r.loop(name)
	if r.b != nil {
		return l.remoteOpen(ctx)
	}
	data, err := fsys.ReadState(l.state, "Read", nil, 1)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, l.missing()
	}
	return l, nil
}

// List returns every loop under the root, sorted by name: each directory
// of a valid loop name that holds a state file. It reads no state: a
// Loop's View does, without the lock, and gives the *filetxn.FormatError of a state
// that is refused. A root without loops gives an empty list. In files List
// does not block and a done ctx does not stop it; on a backend it is one
// request, bounded by ctx.
func (r *Root) List(ctx context.Context) ([]*Loop, error) {
	if r.b != nil {
		return r.remoteList(ctx)
	}
	ents, err := os.ReadDir(filepath.Join(r.dir, loopsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Loop
	for _, e := range ents {
		if !e.IsDir() || !validName(e.Name()) {
			continue // staging and tombstone directories are hidden names
		}
		l := r.loop(e.Name())
		if _, err := os.Stat(l.state); errors.Is(err, fs.ErrNotExist) {
			continue // being deleted, or not a loop (a link whose target is gone is no state)
		}
		out = append(out, l)
	}
	return out, nil
}

// initial returns the initial state of the loop name, created at now, with
// fn applied (nil: none), and the bytes Create writes for it, or Create's
// refusal of the name, of fn's error or of the state fn leaves; it does no
// I/O.
func initial(name string, now time.Time, fn func(*Doc) error) (*Doc, []byte, error) {
	if err := checkName("Create", name); err != nil {
		return nil, nil, err
	}
	if windowsDevice(name) {
		return nil, nil, fmt.Errorf("loopstate: Create: invalid loop name %q: Windows reserves it for a device, so its directory cannot be made there: %w", name, filetxn.ErrInvalidArgument)
	}
	d := newDoc(name, now)
	if fn != nil {
		if err := fn(d); err != nil {
			return nil, nil, err
		}
	}
	invalid := func(err error) error {
		return fmt.Errorf("loopstate: Create %s: %v: %w", name, err, filetxn.ErrInvalidArgument)
	}
	if err := d.Gates.validate(); err != nil {
		return nil, nil, invalid(err)
	}
	if err := errors.Join(checkText("Create", "template", d.Template), checkText("Create", "schedule every", d.Schedule.Every)); err != nil {
		return nil, nil, err
	}
	if p := d.Paused; p != nil {
		if err := errors.Join(checkText("Create", "pause by", p.By), checkText("Create", "pause reason", p.Reason)); err != nil {
			return nil, nil, err
		}
	}
	data, err := codec{name: name}.Encode(d) // it checks the invariants
	if err != nil {
		return nil, nil, invalid(err)
	}
	return d, data, nil
}

// windowsDevice reports whether name, a valid loop name, is one Windows
// reserves for a device: a file or directory of that name cannot be made
// there (the path names the device instead).
func windowsDevice(name string) bool {
	switch name {
	case "con", "prn", "aux", "nul":
		return true
	}
	return len(name) == 4 && (name[:3] == "com" || name[:3] == "lpt") && name[3] >= '0' && name[3] <= '9'
}
