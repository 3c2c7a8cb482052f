//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HandOver passes the held lock to the child process that cmd will start, so
// that when the child (or a library in it) asks for the same lock file it gets
// a borrowed handle at once instead of waiting for its own parent forever.
//
// Call it before cmd.Start and keep holding the lock until the child has
// exited: the child borrows the lock, it does not own it. The child inherits
// one descriptor of the lock file (appended to cmd.ExtraFiles) and the
// HandoverEnv variable naming it (cmd.Env is set to the current environment
// if it was nil). The borrowed handle's Release leaves the lock held; the
// parent's Release ends the lock for both, and retires the descriptor the
// child inherited: the parent's next acquisition opens a fresh one, so a
// child (or something it left running) that outlives the hold cannot pass
// the hand-over check against a later hold of the parent's.
//
// The child verifies before borrowing: the descriptor must be open on the
// same file (device and inode) and must hold its exclusive lock, which
// flock(2) grants again only to the open file description that already holds
// it. A variable set by hand, or a descriptor opened by the child itself,
// grants nothing.
//
// Only exclusive locks are handed over (a shared lock needs no hand-over: a
// child can share it anyway). HandOver returns ErrNotSupported on Windows and
// other systems without flock(2).
func (h *Handle) HandOver(cmd *exec.Cmd) error {
	if h.mode != Exclusive {
		return pathError("HandOver", h.path, errors.New("only an exclusive lock can be handed over"))
	}
	if cmd.Process != nil {
		return pathError("HandOver", h.path, errors.New("command already started"))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return pathError("HandOver", h.path, fs.ErrClosed)
	}
	f := h.e.f
	if !h.borrowed {
		table.mu.Lock()
		h.e.handedOver = true
		table.mu.Unlock()
	} else {
		// Our lock is the descriptor our own parent gave us: pass that one on.
		if h.dup == nil {
			fd, err := unix.Dup(h.e.inherited)
			if err != nil {
				return pathError("HandOver", h.path, err)
			}
			unix.CloseOnExec(fd)
			h.dup = &handoverFile{os.NewFile(uintptr(fd), h.path)}
		}
		f = h.dup.f
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	childFD := 2 + len(cmd.ExtraFiles)
	item := fmt.Sprintf("%d:%d:%d", childFD, h.e.id.dev, h.e.id.ino)
	cmd.Env = withEnv(cmd.Env, item)
	return nil
}

// inherited reports whether this process was handed e's lock by its parent:
// HandoverEnv names a descriptor of this very file (same device and inode)
// and that descriptor holds the exclusive lock. The caller has just failed to
// lock e.f, its own description, so the lock is held by someone; flock(2)
// then grants LOCK_EX|LOCK_NB on the inherited descriptor only when that
// descriptor's open file description is the holder. The descriptor is marked
// close-on-exec so that it does not leak further than this process.
func inherited(e *entry, path string) (int, bool) {
	v := os.Getenv(HandoverEnv)
	if v == "" {
		return -1, false
	}
	for item := range strings.SplitSeq(v, ",") {
		parts := strings.Split(item, ":")
		if len(parts) != 3 {
			continue
		}
		fd, err1 := strconv.Atoi(parts[0])
		dev, err2 := strconv.ParseUint(parts[1], 10, 64)
		ino, err3 := strconv.ParseUint(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || fd < 3 || dev != e.id.dev || ino != e.id.ino {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
			uint64(st.Dev) != e.id.dev || uint64(st.Ino) != e.id.ino {
			continue
		}
		if lockFD(uintptr(fd), Exclusive, false) != nil {
			continue
		}
		unix.CloseOnExec(fd)
		return fd, true
	}
	return -1, false
}
