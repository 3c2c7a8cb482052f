package lock

import (
	"os"
	"os/exec"
)

// handoverEnv is the environment variable, FILETXN_LOCK_HANDOVER, through
// which HandOver tells a child process which of its inherited descriptors
// hold which lock files, with the holder's pid and the nonce it wrote into
// its holder record, and the pid of the process that ran HandOver. The
// variable alone grants nothing: the child checks that the descriptor it
// names (or, from its own parent, another inherited one) is open on that
// very lock file and holds its lock, and that the holder record still
// carries that pid and nonce, and otherwise locks like any other process.
const handoverEnv = "FILETXN_LOCK_HANDOVER"

// HandOver passes the held lock to the child process that cmd will start, so
// that the child's Acquire of the same lock file gets a borrowed handle at
// once instead of waiting for its own parent forever. Call it before
// cmd.Start and keep holding the lock until the child has exited: the child
// borrows the lock, it does not own it. The child inherits one descriptor of
// the lock file, appended to cmd.ExtraFiles (later changes may move it among
// the first 1024; if they drop it, the child's Acquire and TryAcquire of the
// lock fail at once with ErrHandOverBroken), and the FILETXN_LOCK_HANDOVER
// variable naming it (cmd.Env is set to the environment if nil; later changes
// must append, or the child waits for the lock like any other process).
// The child borrows only with proof that the lock is held for it at that
// moment: the inherited descriptor holds it, and the holder record carries
// the nonce HandOver wrote there. Otherwise (a lock released before the child
// looks, a variable set by hand) it takes the lock as its own, and its
// Release unlocks it. A borrowed handle's Release leaves the lock held; the
// parent's ends it for both and retires the inherited descriptor, so a child
// that outlives the hold cannot borrow a later one. HandOver writes the holder
// record even for a lock taken WithoutHolder, and fails if it cannot (a
// borrowed handle passes on its parent's proof); without flock(2), with
// ErrNotSupported.
func (h *Handle) HandOver(cmd *exec.Cmd) error { return h.handOver(cmd) }

// handoverFile is a descriptor duplicated for a child by HandOver on a
// borrowed handle; it is closed when the handle is released.
type handoverFile struct{ f *os.File }

func (d *handoverFile) close() { d.f.Close() }
