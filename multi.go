package filetxn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/multix"
	"github.com/filetxn/filetxn/lock"
)

// A Member is a store that can take part in MutateAll: a *Store[D] of any D,
// and this module's typed stores (*ledger.Store, *board.Store,
// *loopstate.Loop). A store type of one's own that is built on a Store[D]
// becomes one by embedding the Membership that Join returns.
type Member interface {
	membership() *Membership
}

// A Membership makes the type that embeds it a Member, standing for the
// Store[D] given to Join. The zero Membership stands for no store:
// MutateAll refuses it.
type Membership struct {
	join func() part
}

func (m *Membership) membership() *Membership { return m }

func (s *Store[D]) membership() *Membership {
	if s == nil {
		return &Membership{}
	}
	return &Membership{join: func() part { return &storePart[D]{s: s} }}
}

// Join returns the Membership of a store type of one's own built on s, for
// a type that checks or completes its documents itself (as loopstate.Loop
// does). check, when not nil, runs on s's document as read, under the locks
// and before fn: its error fails MutateAll, as it is, before fn runs. stamp,
// when not nil, runs on the document after fn when fn changed it (to record
// the time of the change, say), before it is encoded.
func Join[D any](s *Store[D], check func(D) error, stamp func(D)) Membership {
	if s == nil {
		return Membership{}
	}
	return Membership{join: func() part { return &storePart[D]{s: s, check: check, stamp: stamp} }}
}

// A Multi holds the documents of one MutateAll for its fn: In (or a typed
// store's In method) gets each. It is valid only while fn runs.
type Multi struct {
	parts   []part
	appends []pendingAppend // lines to log with the commit (internal/multix)
	done    bool
}

// A pendingAppend is a line that a typed store logs with the commit
// (multix.Append): appended to path after the renames, under the lock of
// part; on a backend, the document name created.
type pendingAppend struct {
	part       int
	path, name string
	data       []byte
}

func init() {
	multix.Append = appendInCommit
	multix.MutateAllHeld = mutateAllHeld
	multix.Check = checkMembers
}

// asMembers returns members as Members, or an error for one that is not.
func asMembers(members []any) ([]Member, error) {
	ms := make([]Member, len(members))
	for i, m := range members {
		mb, ok := m.(Member)
		if !ok && m != nil {
			return nil, fmt.Errorf("filetxn: MutateAll: member %d is a %T: %w", i, m, ErrInvalidArgument)
		}
		ms[i] = mb
	}
	return ms, nil
}

// checkMembers is multix.Check.
func checkMembers(members []any) error {
	ms, err := asMembers(members)
	if err == nil {
		_, err = newMulti(ms, func(*Multi) error { return nil })
	}
	return err
}

// mutateAllHeld is multix.MutateAllHeld.
func mutateAllHeld(ctx context.Context, members []any, held any, fn func(m any) error) error {
	ms, err := asMembers(members)
	if err != nil {
		return err
	}
	h, ok := held.(Held)
	if !ok || h == nil {
		return fmt.Errorf("filetxn: MutateAll: the lock held is a %T, not a backend's: %w", held, ErrInvalidArgument)
	}
	mfn := func(m *Multi) error { return fn(m) }
	c, err := newMulti(ms, mfn)
	if err != nil {
		return err
	}
	if c.backend == nil {
		return fmt.Errorf("filetxn: MutateAll with a lock held: not on a backend: %w", ErrInvalidArgument)
	}
	_, err = c.remoteRun(ctx, h, mfn)
	return err
}

// appendInCommit is multix.Append.
func appendInCommit(m, member any, path, name string, data []byte) error {
	mm, ok := m.(*Multi)
	if !ok || mm == nil {
		return fmt.Errorf("filetxn: append in a commit: %T is not a *Multi: %w", m, ErrInvalidArgument)
	}
	if mm.done {
		panic("filetxn: append in a commit called after its MutateAll's fn returned")
	}
	if len(data) == 0 || data[len(data)-1] != '\n' || !utf8.Valid(data) {
		return fmt.Errorf("filetxn: append in a commit to %s: not whole lines of UTF-8: %w", path, ErrInvalidArgument)
	}
	for i, p := range mm.parts {
		if p.store() == member {
			mm.appends = append(mm.appends, pendingAppend{part: i, path: path, name: name, data: data})
			return nil
		}
	}
	return fmt.Errorf("filetxn: append in a commit to %s: its store is not a member: %w", path, ErrInvalidArgument)
}

// In returns the document of s in m, read under its lock; fn changes it in
// place. It panics if s is not one of the members m was made for, or if
// m's fn has returned: either is a mistake in the program, as a Tx used
// after its callback is.
func In[D any](m *Multi, s *Store[D]) D {
	if m.done {
		panic("filetxn: In called after its MutateAll's fn returned")
	}
	for _, p := range m.parts {
		if sp, ok := p.(*storePart[D]); ok && sp.s == s {
			return sp.doc
		}
	}
	panic("filetxn: In: the store of " + s.path + " is not a member of this MutateAll")
}

// MutateAll runs fn once, on its caller's goroutine, over the documents of
// several stores (In gets each) with all of their locks held, and publishes
// every document fn changed, or none: a commit that no crash, full disk or
// lost lock splits (WithoutSync gives that up at a power loss). It returns
// one Commit per member.
//
// The locks are the members' own (single-file writers still exclude it file
// by file), taken in one global order (lock.AcquireAll): MutateAlls over
// overlapping stores never deadlock. One changed file costs one write; more
// are staged, an intent record naming them made durable beside each lock
// file (docs/formats/commit.md), and then renamed. The next transaction on
// any of the files, from any process, completes or undoes a commit a crash
// left unfinished, before it reads. A lock-free reader (View) may meanwhile
// see some files new and others old.
//
// Errors are Mutate's, naming the file (fn's: nothing written; re-entry:
// lock.ErrReentrant; ctx bounds waits); a lock lost before the renames
// publishes nothing, unless the error matches ErrUndecided (its undo could
// not be made durable); one after the first rename says the commit stands.
// No members, two of one file, a nil fn: ErrInvalidArgument.
func MutateAll(ctx context.Context, members []Member, fn func(*Multi) error) ([]Commit, error) {
	c, err := newMulti(members, fn)
	if err != nil {
		return nil, err
	}
	if c.backend != nil {
		return c.remoteRun(ctx, nil, fn)
	}
	if err := c.lock(ctx); err != nil {
		return nil, err
	}
	defer c.release()
	return c.run(fn)
}

// A part is one member's share of a MutateAll: its store, and the document
// read and changed under the locks.
type part interface {
	store() any // the *Store[D], to tell members apart
	path() string
	opts() *options
	lockPath() (string, error)
	read() error                   // read and decode, under the locks; then check
	change() ([]byte, bool, error) // after fn: stamp, encode; whether it changed
	readBytes() []byte             // the bytes read (nil: no file)
	setRemote(r *remoteTx)         // on a backend: read under r's lock
}

// storePart is the part of a Store[D].
type storePart[D any] struct {
	s      *Store[D]
	check  func(D) error
	stamp  func(D)
	data   []byte    // the bytes read
	remote *remoteTx // the lock it is read under, on a backend
	doc    D
	base   []byte // the encoding of doc as decoded
}

func (p *storePart[D]) store() any                { return p.s }
func (p *storePart[D]) path() string              { return p.s.path }
func (p *storePart[D]) opts() *options            { return &p.s.o }
func (p *storePart[D]) lockPath() (string, error) { return p.s.LockPath() }
func (p *storePart[D]) readBytes() []byte         { return p.data }

func (p *storePart[D]) setRemote(r *remoteTx) { p.remote = r }

func (p *storePart[D]) read() error {
	read := p.s.readDoc
	if p.remote != nil {
		read = func(op string, _ bool) ([]byte, error) { return p.remote.read(p.s.path, op) }
	}
	data, err := read("Read", false)
	if err != nil {
		return err
	}
	p.data = data
	if p.doc, p.base, err = p.s.decode(data); err != nil {
		return err
	}
	if p.check != nil {
		return p.check(p.doc)
	}
	return nil
}

func (p *storePart[D]) change() ([]byte, bool, error) {
	out, err := p.s.encode(p.doc, p.data)
	if err != nil || bytes.Equal(out, p.base) {
		return nil, false, err
	}
	// A change back to the bytes on disk (from a codec whose encoding of
	// what it decoded differs from them) has nothing to publish, and a
	// staged version equal to the old one would leave recovery unable to
	// tell whether it was renamed.
	if p.data != nil && bytes.Equal(out, p.data) {
		return nil, false, nil
	}
	if p.stamp != nil {
		p.stamp(p.doc)
		if out, err = p.s.encode(p.doc, p.data); err != nil {
			return nil, false, err
		}
	}
	return out, true, nil
}

// multi is one MutateAll.
type multi struct {
	parts []part
	locks []string       // the distinct lock paths, absolute, in the order of first use
	of    []int          // of[i] is the index in locks of parts[i]'s lock
	opts  []lock.Option  // each lock's options (lock.ForPath)
	held  []*lock.Handle // the handles of locks, while held
	// noWait: a member was made WithNoWait, so a busy lock fails the call
	// at once with an error matching lock.ErrWouldBlock.
	noWait bool
	// backend is the members' backend, when they are kept in one; locks
	// are then its lock names.
	backend Backend
}

func newMulti(members []Member, fn func(*Multi) error) (*multi, error) {
	if fn == nil {
		return nil, fmt.Errorf("filetxn: MutateAll: nil fn: %w", ErrInvalidArgument)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("filetxn: MutateAll: no members: %w", ErrInvalidArgument)
	}
	c := &multi{parts: make([]part, len(members)), of: make([]int, len(members))}
	files := make(map[string]int, len(members))
	for i, mb := range members {
		var ms *Membership
		if mb != nil {
			ms = mb.membership()
		}
		if ms == nil || ms.join == nil {
			return nil, fmt.Errorf("filetxn: MutateAll: member %d stands for no store: %w", i, ErrInvalidArgument)
		}
		p := ms.join()
		c.parts[i] = p
		if b := p.opts().backend; i == 0 {
			c.backend = b
		} else if b != c.backend {
			return nil, mixedBackends(0, i)
		}
		if c.backend != nil {
			if err := c.addRemote(i, p, files); err != nil {
				return nil, err
			}
			continue
		}
		abs, err := filepath.Abs(p.path())
		if err != nil {
			return nil, &fs.PathError{Op: "MutateAll", Path: p.path(), Err: err}
		}
		if j, ok := files[abs]; ok {
			return nil, fmt.Errorf("filetxn: MutateAll: members %d and %d are both %s: %w", j, i, p.path(), ErrInvalidArgument)
		}
		files[abs] = i
		lp, err := p.lockPath()
		if err != nil {
			return nil, err
		}
		if lp, err = filepath.Abs(lp); err != nil {
			return nil, &fs.PathError{Op: "MutateAll", Path: p.path(), Err: err}
		}
		k := slices.Index(c.locks, lp)
		if k < 0 {
			k = len(c.locks)
			c.locks = append(c.locks, lp)
			c.opts = append(c.opts, lock.ForPath(lp, p.opts().lockOpts...))
		}
		c.of[i] = k
		c.noWait = c.noWait || p.opts().noWait
	}
	return c, nil
}

// lock takes every lock, and then completes or undoes the unfinished
// commits recorded beside them (lockWith); with noWait, without waiting
// for a busy one.
func (c *multi) lock(ctx context.Context) error {
	if c.noWait {
		// A done ctx takes the free locks and fails at once on a busy one,
		// with a *lock.BusyError that says ErrWouldBlock, as TryAcquire's.
		done, cancel := context.WithCancel(ctx)
		cancel()
		err := c.lockWith(done)
		if be := (*lock.BusyError)(nil); errors.As(err, &be) && be.Err == context.Canceled && ctx.Err() == nil {
			be.Err = lock.ErrWouldBlock
		}
		return err
	}
	return c.lockWith(ctx)
}

// lockWith takes every lock, waiting as ctx lets it, and then completes or
// undoes the unfinished commits recorded beside them. A commit that names a
// lock the call does not hold has every lock released, and all of them
// taken again with that one, so that no lock is waited for while another is
// held out of order.
func (c *multi) lockWith(ctx context.Context) error {
	var extra []string
	for {
		paths := append(slices.Clip(c.locks), extra...)
		opts := append([]lock.Option{lock.WithPurpose("commit")}, c.opts...)
		for _, p := range extra {
			opts = append(opts, lock.ForPath(p, recoverLockOpts...))
		}
		hs, err := lock.AcquireAll(ctx, paths, opts...)
		if err != nil {
			return err
		}
		need, err := settleHeld(paths, hs)
		if err == nil && len(need) == 0 {
			c.held = hs[:len(c.locks)]
			for _, h := range hs[len(c.locks):] {
				h.Release()
			}
			return nil
		}
		for _, h := range hs {
			h.Release()
		}
		if err != nil {
			return err
		}
		for _, l := range need {
			if !slices.Contains(paths, l) && !slices.Contains(extra, l) {
				extra = append(extra, l)
			}
		}
	}
}

func (c *multi) release() {
	for _, h := range c.held {
		h.Release()
	}
}

// decide reads every file, runs fn and returns what it changed: outs[i]
// for each i of changed, and the lines fn logs with them.
func (c *multi) decide(fn func(*Multi) error) (outs [][]byte, changed []int, appends []pendingAppend, err error) {
	for _, p := range c.parts {
		if err := p.read(); err != nil {
			return nil, nil, nil, err
		}
	}
	m := &Multi{parts: c.parts}
	err = func() error {
		defer func() { m.done = true }()
		return fn(m)
	}()
	if err != nil {
		return nil, nil, nil, err
	}
	outs = make([][]byte, len(c.parts))
	for i, p := range c.parts {
		out, ok, err := p.change()
		if err != nil {
			return nil, nil, nil, err
		}
		if ok {
			outs[i] = out
			changed = append(changed, i)
		}
	}
	return outs, changed, m.appends, nil
}

// run reads every file, runs fn and publishes what it changed.
func (c *multi) run(fn func(*Multi) error) ([]Commit, error) {
	outs, changed, appends, err := c.decide(fn)
	if err != nil {
		return nil, err
	}
	commits := make([]Commit, len(c.parts))
	switch {
	case len(changed) == 0 && len(appends) > 0:
		return commits, c.appendAlone(appends)
	case len(changed) == 0:
		return commits, nil
	case len(appends) > 0:
		// A line logged with the files is the record's to redo: a crash
		// after the renames must not leave the files without it.
		return c.publish(changed, outs, commits, appends)
	case len(changed) == 1:
		// One file, one atomic write; but fn may have decided from the
		// others, so every lock must still be held (the write checks its
		// own), as publish checks them all before its first rename.
		i := changed[0]
		for k, h := range c.held {
			if k == c.of[i] {
				continue
			}
			if ok, err := h.Current(); !ok || err != nil {
				return nil, c.lostError(slices.Index(c.of, k), err)
			}
		}
		p := c.parts[i]
		tx := &Tx{o: p.opts(), lock: c.held[c.of[i]]}
		commit, err := tx.Write(p.path(), outs[i])
		commits[i] = commit
		return commits, err
	}
	return c.publish(changed, outs, commits, nil)
}

// appendLog is what the record says of one line logged with the commit.
func (c *multi) appendLog(a pendingAppend) (intentAppend, error) {
	p := c.parts[a.part]
	target, _, err := fsys.Target(a.path)
	if err == nil {
		target, err = filepath.Abs(target)
	}
	if err != nil {
		return intentAppend{}, stepError("Commit", a.path, "resolve the log", err)
	}
	var at int64
	switch fi, err := os.Stat(target); {
	case err == nil:
		at = fi.Size()
	case !errors.Is(err, fs.ErrNotExist):
		return intentAppend{}, stepError("Commit", a.path, "stat the log", err)
	}
	return intentAppend{Path: target, At: at, Data: string(a.data), Durable: !fsys.Collect(p.opts().writeOptions(nil)).NoSync}, nil
}

// appendAlone logs lines that no changed file goes with: each is appended
// under its lock, checked first, as any write.
func (c *multi) appendAlone(appends []pendingAppend) error {
	for _, a := range appends {
		if ok, err := c.held[c.of[a.part]].Current(); !ok || err != nil {
			return c.lostError(a.part, err)
		}
		ia, err := c.appendLog(a)
		if err == nil {
			err = ia.apply("Commit", true)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lostError is the error of a commit that found the lock of part i lost
// (ok false) or could not tell (err).
func (c *multi) lostError(i int, err error) error {
	lp := c.held[c.of[i]].Path()
	if err == nil {
		err = fmt.Errorf("lock file %s deleted or replaced while held: %w", lp, lock.ErrLockLost)
	} else {
		err = fmt.Errorf("checking lock file %s: %w", lp, err)
	}
	return &fs.PathError{Op: "Commit", Path: c.parts[i].path(), Err: err}
}

// errSplit reports a failure after the commit point, when some files are
// published and the others staged: the commit stands.
var errSplit = errors.New("committed, but not every file is published yet: the next transaction on any of the files publishes the rest")

// addRemote adds part i, kept in c.backend, to c: its document's name, and
// its lock's.
func (c *multi) addRemote(i int, p part, names map[string]int) error {
	name := docName(p.path())
	if j, ok := names[name]; ok {
		return fmt.Errorf("filetxn: MutateAll: members %d and %d are both %s: %w", j, i, p.path(), ErrInvalidArgument)
	}
	names[name] = i
	lp, err := p.lockPath()
	if err != nil {
		return err
	}
	k := slices.Index(c.locks, lp)
	if k < 0 {
		k = len(c.locks)
		c.locks = append(c.locks, lp)
	}
	c.of[i] = k
	c.noWait = c.noWait || p.opts().noWait
	return nil
}

// remoteRun is MutateAll on a backend: every lock, in the order of their
// names; every document read under them; fn once; and one Commit of every
// changed document, fenced by every lock, which lets them go.
//
// With h, the caller holds the lock of part 0 already and keeps it (a
// tick on a backend, whose lock is its runner's liveness): the other locks
// are tried without waiting, since waiting for one while holding h could
// wait for ever on a commit that holds it and waits for h; while one is
// busy, every lock taken is let go, and all are tried again after a
// pause, until ctx ends. The Commit is then fenced by h too, and leaves it
// held.
func (c *multi) remoteRun(ctx context.Context, h Held, fn func(*Multi) error) (out []Commit, err error) {
	names := slices.Sorted(slices.Values(c.locks))
	var hs *remoteHeld
	var held []Held
	if h == nil {
		hs, err = lockRemote(ctx, c.backend, names, !c.noWait)
	} else {
		first := c.locks[c.of[0]]
		names = slices.DeleteFunc(names, func(n string) bool { return n == first })
		hs, err = tryRemote(ctx, c.backend, names)
		names, held = append([]string{first}, names...), []Held{h}
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if lost := hs.release(); err == nil && lost != nil {
			out, err = nil, lost
		}
	}()
	held = append(held, hs.held...)
	for i, p := range c.parts {
		p.setRemote(&remoteTx{ctx: ctx, b: c.backend, held: held[slices.Index(names, c.locks[c.of[i]])]})
	}
	outs, changed, appends, err := c.decide(fn)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 && len(appends) == 0 {
		return make([]Commit, len(c.parts)), nil
	}
	puts := make([]Put, 0, len(changed)+len(appends))
	for _, i := range changed {
		puts = append(puts, Put{Name: docName(c.parts[i].path()), Data: outs[i]})
	}
	for _, a := range appends {
		puts = append(puts, Put{Name: a.name, Data: a.data})
	}
	named := c.parts[0].path() // the file the error names
	if len(changed) > 0 {
		named = c.parts[changed[0]].path()
	}
	if err := commitHeld(ctx, c.backend, held, puts, h == nil, "Commit", named); err != nil {
		return nil, err
	}
	commits := make([]Commit, len(c.parts))
	for _, i := range changed {
		commits[i] = Commit{Written: true, published: outs[i]}
	}
	return commits, nil
}

// heldPause bounds tryRemote's pause between two tries.
const heldPause = 50 * time.Millisecond

// tryRemote is lockRemote without a wait for any of the locks, tried again
// after a pause while one is busy, until ctx ends; a try that finds one
// busy lets go of those it took.
func tryRemote(ctx context.Context, b Backend, names []string) (*remoteHeld, error) {
	for pause := time.Millisecond; ; pause = min(2*pause, heldPause) {
		hs, err := lockRemote(ctx, b, names, false)
		if err == nil || !errors.Is(err, lock.ErrWouldBlock) {
			return hs, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}
