package loopstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/bound"
	"github.com/filetxn/filetxn/internal/loopnames"
)

// The loops of a Root made WithBackend are documents of the backend, named
// from the root's directory as filetxn's Store.Name names a store's path
// (docs/formats/loopstate.md, "On a backend"):
//
//	<dir>/loops/<name>/.state.loop    the state, the same JSON
//	<dir>/loops/<name>/.state.lock    the name of the loop's lock (no document)
//	<dir>/ticks/<name>/<id>           one tick-log line each, in creation order
//
// The tick lines live beside the loops, not under them, so that List reads
// the states alone, whatever the logs hold. Package loopnames builds the
// names, for the tools that copy a loop too.

// docName is the name in a backend of the document at path.
func docName(p string) string { return loopnames.Doc(p) }

// ticksPrefix is the prefix of the names of the loop's tick lines.
func (l *Loop) ticksPrefix() string { return loopnames.TicksPrefix(l.root.dir, l.name) }

// tickNames returns n fresh names of tick lines of l, which sort in the
// order given: the lines of one commit are created at once, and a backend
// lists those in the order of their names.
func (l *Loop) tickNames(n int) []string { return loopnames.Ticks(l.ticksPrefix(), l.now(), n) }

// remoteCommit is commit on a backend: the lines recs and the state out
// (unless it is old, or nil: lines alone) in one Commit fenced by the lock
// tx holds, so that a tick's line and its count are published together or
// not at all.
func (l *Loop) remoteCommit(ctx context.Context, tx *filetxn.Tx, out, old []byte, recs []*TickRecord) error {
	var puts []filetxn.Put
	for i, name := range l.tickNames(len(recs)) {
		puts = append(puts, filetxn.Put{Name: name, Data: appendRecord(nil, recs[i])})
	}
	if out != nil && !bytes.Equal(out, old) {
		puts = append(puts, filetxn.Put{Name: docName(l.state), Data: out})
	}
	if len(puts) == 0 {
		return nil
	}
	return l.commitHeld(ctx, tx, puts, false, "Write")
}

// commitHeld is the backend's Commit of puts, fenced by the lock tx holds
// (release: and letting it go), as a request under the lock: ctx bounds it
// as bound.Held says. Its error is an *fs.PathError of op and the state.
func (l *Loop) commitHeld(ctx context.Context, tx *filetxn.Tx, puts []filetxn.Put, release bool, op string) error {
	ctx, cancel := bound.Held(ctx)
	defer cancel()
	if err := l.root.b.Commit(ctx, []filetxn.Held{tx.Held()}, puts, release); err != nil {
		return &fs.PathError{Op: op, Path: l.state, Err: err}
	}
	return nil
}

// createTick logs rec without the lock (skipBusy): one line, created.
func (l *Loop) createTick(ctx context.Context, rec *TickRecord) error {
	name := l.tickNames(1)[0]
	if err := l.root.b.Create(ctx, name, appendRecord(nil, rec)); err != nil {
		return &fs.PathError{Op: "Write", Path: name, Err: err}
	}
	return nil
}

// readIn is read with ctx for the backend's request (tx's own is the one
// the lock was waited for with, which may be over by now). As the
// engine's, the requests made under the lock go on after ctx ends, for a
// bound of their own (package bound): ctx bounds the wait for the lock.
func (l *Loop) readIn(ctx context.Context, tx *filetxn.Tx) (*Doc, []byte, error) {
	h := tx.Held()
	if h == nil {
		return l.read(tx)
	}
	ctx, cancel := bound.Held(ctx)
	defer cancel()
	data, err := h.Read(ctx, docName(l.state))
	if err != nil {
		return nil, nil, &fs.PathError{Op: "Read", Path: l.state, Err: err}
	}
	return l.decodeState(data)
}

// remoteBusy is runnerBusy on a backend, where the lock is the runner's
// liveness: a runner in another process whose tick is marked and whose
// lock someone else holds has lost it (its lease expired) and can publish
// nothing, so only a tick that this process still runs refuses op (its
// runner lost the lock and is about to record it again; see recordLost).
func (l *Loop) remoteBusy(op string, ct *currentTick) error {
	if !ct.self() {
		return nil
	}
	if _, ok := l.runningHere(ct); !ok {
		return nil
	}
	return &liveRunnerError{op: op, loop: l.name, lock: docName(l.lock), ct: *ct, remote: true}
}

// remoteCreate is Create on a backend: the state, created if absent.
func (l *Loop) remoteCreate(ctx context.Context, data []byte) error {
	err := l.root.b.Create(ctx, docName(l.state), data)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("loopstate: Create: loop %s exists (%s): %w", l.name, docName(l.state), err)
	}
	if err != nil {
		return &fs.PathError{Op: "Create", Path: l.state, Err: err}
	}
	return nil
}

// remoteOpen is Open on a backend.
func (l *Loop) remoteOpen(ctx context.Context) (*Loop, error) {
	data, err := l.root.b.Get(ctx, docName(l.state))
	if err != nil {
		return nil, &fs.PathError{Op: "Read", Path: l.state, Err: err}
	}
	if data == nil {
		return nil, l.missing()
	}
	return l, nil
}

// remoteList is List on a backend: one List of the states.
func (r *Root) remoteList(ctx context.Context) ([]*Loop, error) {
	prefix := docName(filepath.Join(r.dir, loopsDir)) + "/"
	ents, err := r.b.List(ctx, prefix)
	if err != nil {
		return nil, &fs.PathError{Op: "List", Path: prefix, Err: err}
	}
	var names []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(strings.TrimPrefix(e.Name, prefix), "/"+stateFile)
		if ok && validName(name) && path.Join(prefix, name, stateFile) == e.Name {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]*Loop, len(names))
	for i, name := range names {
		out[i] = r.loop(name)
	}
	return out, nil
}

// remoteTicks is Ticks on a backend: the lines in creation order, and a
// missing state an error matching filetxn.ErrNotFound. Only the lines
// created after the state count: a line created for an earlier loop of the
// name (a scheduled tick's busy line, created without the lock, that read
// the old state before a Delete) is not this loop's. The lines are listed
// before the state, so that a Delete and a Create between the two reads
// leave only lines older than the state they are compared with.
func (l *Loop) remoteTicks(ctx context.Context) ([]TickRecord, error) {
	ents, err := l.root.b.List(ctx, l.ticksPrefix())
	if err != nil {
		return nil, &fs.PathError{Op: "Read", Path: l.ticksPrefix(), Err: err}
	}
	born, err := l.remoteCreated(ctx)
	if err != nil {
		return nil, err
	}
	var out []TickRecord
	for _, e := range ents {
		if e.Created < born {
			continue // an earlier loop's
		}
		if r, err := parseRecord(bytes.TrimSpace(e.Data)); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// remoteCreated returns the Created of the loop's state (0 if the backend
// does not tell), or an error matching filetxn.ErrNotFound.
func (l *Loop) remoteCreated(ctx context.Context) (int64, error) {
	name := docName(l.state)
	ents, err := l.root.b.List(ctx, name)
	if err != nil {
		return 0, &fs.PathError{Op: "Read", Path: l.state, Err: err}
	}
	for _, e := range ents {
		if e.Name == name {
			return e.Created, nil
		}
	}
	return 0, l.missing()
}

// remoteDelete is Delete on a backend: under the loop's lock, one Commit
// removes the state and every tick line. A loop whose tick this process
// still runs after losing the lock is not deleted (see Mutate).
func (l *Loop) remoteDelete(ctx context.Context) error {
	var missing error
	err := l.locked(ctx, "delete", false, func(tx *filetxn.Tx) error {
		data, err := tx.Read(l.state)
		if err != nil {
			return err
		}
		if data == nil {
			missing = l.missing()
			return nil
		}
		if d, err := l.codec().Decode(data); err == nil {
			// A state that is refused is deleted all the same.
			if err := l.runnerBusy("delete", d.current); err != nil {
				return err
			}
		}
		puts := []filetxn.Put{{Name: docName(l.state), Remove: true}, {Name: l.ticksPrefix(), Remove: true, Prefix: true}}
		return l.commitHeld(ctx, tx, puts, true, "Delete")
	})
	if err != nil {
		return err
	}
	return missing
}
