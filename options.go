package filetxn

import (
	"fmt"
	"path/filepath"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/lock"
)

// An Option configures a Store. Options apply in order, so a later one wins
// over an earlier one that sets the same thing: a typed store puts its
// defaults first and its caller's options after them.
type Option func(*options)

type options struct {
	stateRoot string
	lockPath  string
	noSync    bool
	noWait    bool
	lockOpts  []lock.Option
	err       error   // the first invalid option, reported by NewStore
	lockErr   error   // WithNoLock: every call that needs the lock fails with this
	backend   Backend // WithBackend: the document is kept there, not in a file

	// probeLockOpts is lockOpts and lock.WithoutCreate, set by NewStore: a
	// MutateProbed's first attempt at the lock creates no lock file.
	probeLockOpts []lock.Option
}

// validate returns the first invalid option seen, wrapping ErrInvalidArgument.
func (o *options) validate() error { return o.err }

func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalidArgument)
	}
}

// writeOptions returns the atomicfile options of one write or append made
// with opts: the store's durability first, then opts.
func (o *options) writeOptions(opts []atomicfile.Option) []atomicfile.Option {
	if !o.noSync {
		return opts
	}
	return append([]atomicfile.Option{atomicfile.WithoutSync()}, opts...)
}

// WithStateRoot places the lock file under dir, at lock.SidecarPath(dir,
// path): outside the data directory, and the same file that bmad-loop locks
// when its state root is dir. dir must be absolute; NewStore refuses a
// relative or empty one.
func WithStateRoot(dir string) Option {
	return func(o *options) {
		if !filepath.IsAbs(dir) {
			o.invalid("WithStateRoot(%q): the state root must be an absolute path", dir)
		}
		o.stateRoot, o.lockPath = dir, ""
	}
}

// WithLockPath uses the lock file at path (NewStore refuses an empty one).
// Every writer of the data file must use the same lock file.
func WithLockPath(path string) Option {
	return func(o *options) {
		if path == "" {
			o.invalid("WithLockPath(%q): empty lock path", path)
		}
		o.lockPath, o.stateRoot = path, ""
	}
}

// WithoutSync skips every fsync of the store's writes, appends and removals:
// faster, but a power loss or kernel crash may undo a write or leave an
// empty file. A process crash still leaves the old or the new version. It
// suits files that can be rebuilt, and tests.
func WithoutSync() Option { return func(o *options) { o.noSync = true } }

// WithNoWait makes every transaction fail at once, with an error matching
// lock.ErrWouldBlock, when another holder has the lock, instead of waiting.
// Unlike a done ctx, it leaves ctx free to bound the rest of the caller's
// work. Such a store never groups calls into one write.
func WithNoWait() Option { return func(o *options) { o.noWait = true } }

// WithLockOptions passes options to every lock acquisition, such as
// lock.WithPurpose, or lock.WithWaitReport to report long waits.
func WithLockOptions(opts ...lock.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

// WithNoLock makes every call that needs the lock fail with err (inside an
// *fs.PathError naming the data file), before any I/O, for a store whose
// lock cannot be placed (a typed store that found no state root): View, and
// a MutateProbed that changes nothing, still succeed. A nil err is refused.
func WithNoLock(err error) Option {
	return func(o *options) {
		if err == nil {
			o.invalid("WithNoLock(nil): no error to fail with")
		}
		o.lockErr = err
	}
}
