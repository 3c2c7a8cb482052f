package fsys

// Options is the resolved configuration of one write. Package atomicfile's
// Option is a func over *Options, so that the options a user gives reach
// the engine's writes too; Check, Published and LockKey are set by the
// engine alone.
type Options struct {
	NoSync    bool // skip the file fsync and the directory fsync
	NoDirSync bool // skip the directory fsync after a rename, and Append's after it creates a file

	// Check, when not nil, is called by CloseAtomicallyReplace after the
	// temporary file's fsync and right before the rename. An error from it
	// publishes nothing (the temporary file is removed, the target is
	// untouched) and is returned as it is. Create calls it too before it
	// removes a file of the locked names to make room (see LockKey), and
	// removes nothing unless it returns nil.
	Check func() error

	// LockKey, when not empty, has Create stage the temporary file under
	// one of the two names Names gives for the target and this
	// key (Key of the lock file the caller holds), rather than
	// under a fresh random name, and has CloseAtomicallyReplace remove a
	// file left under the other name once it has renamed. Every user of
	// the key must hold that lock file's lock: a file of those names is
	// then a dead writer's (see Create).
	LockKey string

	// TempName, when not empty, has Create stage the temporary file under
	// exactly this name in the target's directory, created with O_EXCL (a
	// file there already fails the Create), and no other name removed: a
	// multi-file commit names its staged files in its intent record before
	// it creates them. It wins over LockKey.
	TempName string

	// Published, when not nil, has CloseAtomicallyReplace leave the
	// directory fsync to its caller: once it has renamed, it records in
	// Published what it renamed over and the fsync still to make, and
	// returns without making it.
	Published *Published
}

// Collect applies opts in order to zero Options and returns them; a nil
// option is skipped.
func Collect[O ~func(*Options)](opts []O) Options {
	var o Options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// Published is what a CloseAtomicallyReplace with Options.Published left to
// its caller.
type Published struct {
	// Target is the path renamed over: the caller's path with the symbolic
	// links of its last element followed.
	Target string
	// SyncDir makes the rename durable, by an fsync of Target's directory;
	// it is nil when there is none to make (NoSync, NoDirSync).
	SyncDir func() error
}
