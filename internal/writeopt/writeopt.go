// Package writeopt is the configuration of one write by package atomicfile,
// shared with the engine: atomicfile's options type is an alias of
// [Options], so that the engine, which can import this package, makes an
// atomicfile.Option (a func over *Options) that sets the fields no user can
// set, and publishes in its own order without an exported method on
// atomicfile.PendingFile.
package writeopt

// Options is the resolved configuration of one atomicfile call.
type Options struct {
	NoSync    bool // skip the file fsync and the directory fsync
	NoDirSync bool // skip the directory fsync after a rename

	// Check, when not nil, is called by CloseAtomicallyReplace after the
	// temporary file's fsync and right before the rename. An error from it
	// publishes nothing (the temporary file is removed, the target is
	// untouched) and is returned as it is.
	Check func() error

	// Published, when not nil, has CloseAtomicallyReplace leave the
	// directory fsync to its caller: once it has renamed, it records in
	// Published what it renamed over and the fsync still to make, and
	// returns without making it.
	Published *Published
}

// Published is what a CloseAtomicallyReplace with Options.Published left to
// its caller.
type Published struct {
	// Target is the path renamed over: the caller's path with the symbolic
	// links of its last element followed.
	Target string
	// SyncDir makes the rename durable, by an fsync of Target's directory;
	// it is nil when there is none to make (WithoutSync, WithoutDirSync).
	SyncDir func() error
}
