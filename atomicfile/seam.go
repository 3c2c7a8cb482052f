package atomicfile

import "github.com/filetxn/filetxn/internal/osfile"

// The engine's way to publish (see osfile.PublishPending): the fsync, its
// lock check, then the rename, and the directory fsync when it chooses.
func init() {
	osfile.PublishPending = func(pf any, check func() error) (func() error, error) {
		return pf.(*PendingFile).publishChecked(check)
	}
}
