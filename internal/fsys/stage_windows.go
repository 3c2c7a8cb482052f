package fsys

import "os"

// renameio does not build on Windows: a temporary file is this package's own
// (stageOwn), and replace is MoveFileEx.

// staging is the temporary file, always made by stageOwn here.
type staging struct {
	tmp string // its path
}

// stage creates the temporary file in dir (the target's directory).
func (pf *PendingFile) stage(dir string, perm os.FileMode) error { return pf.stageOwn(dir, perm) }

// discard removes the temporary file of an unpublished PendingFile.
func (pf *PendingFile) discard() error { return os.Remove(pf.tmp) }
