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
// that when the child (or a library in it) asks for the same lock file it gets
// a borrowed handle at once instead of waiting for its own parent forever.
//
// Call it before cmd.Start and keep holding the lock until the child has
// exited: the child borrows the lock, it does not own it. The child inherits
// one descriptor of the lock file (appended to cmd.ExtraFiles) and the
// FILETXN_LOCK_HANDOVER variable naming it (cmd.Env is set to the current
// environment if it was nil). Later changes to cmd.ExtraFiles may add, reorder
// or remove other files: the child finds the lock file's descriptor wherever
// it ends up, among its first 1024. If they drop the lock file, the child's
// Acquire and TryAcquire of that lock fail at once with an error matching
// ErrHandOverBroken, instead of waiting for the parent. Later changes to
// cmd.Env must keep the variable (append, do not replace): a child without it
// cannot tell that it was handed the lock, and waits for it like any other
// process. The borrowed handle's Release leaves the lock held; the parent's
// Release ends the lock for both, and retires the descriptor the child
// inherited: the parent's next acquisition opens a fresh one, so a child (or
// something it left running) that outlives the hold cannot pass the hand-over
// check against a later hold of the parent's.
//
// The child borrows only with proof that the lock is held for it at that
// moment: the descriptor must be open on the same file (device and inode),
// must hold its exclusive lock (flock(2) grants it again only to the open
// file description that already holds it), and the holder record must still
// carry the random nonce that HandOver wrote into it (with this process's
// pid) and passed in the variable. A holder clears its record before it lets
// the lock go, so a lock released before the child looks fails the proof,
// and the child then takes the lock as its own: its Release unlocks it. A
// variable set by hand, or a descriptor opened by the child itself, grants
// nothing.
//
// HandOver writes the holder record even for a lock taken WithoutHolder (the
// proof lives there), and fails if it cannot. A borrowed handle hands on its
// parent's proof. HandOver returns ErrNotSupported on Windows and other
// systems without flock(2).
func (h *Handle) HandOver(cmd *exec.Cmd) error { return h.handOver(cmd) }

// handoverFile is a descriptor duplicated for a child by HandOver on a
// borrowed handle; it is closed when the handle is released.
type handoverFile struct{ f *os.File }

func (d *handoverFile) close() { d.f.Close() }
