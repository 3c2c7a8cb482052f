package atomicfile

import "github.com/filetxn/filetxn/internal/osfile"

// The engine's way to publish (see osfile.PublishPending): the fsync, its
// lock check, then the rename, and the directory fsync when it chooses.
func init() {
	osfile.PublishPending = func(p any, check func() error) (string, func() error, error) {
		pf := p.(*PendingFile)
		syncDir, err := pf.publishChecked(check)
		return pf.target, syncDir, err
	}
}
