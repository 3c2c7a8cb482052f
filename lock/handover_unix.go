//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// handOver is HandOver on a system with flock(2).
func (h *Handle) handOver(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		return pathError("HandOver", h.path, errors.New("command already started"))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return pathError("HandOver", h.path, fs.ErrClosed)
	}
	f := h.e.f
	var proof string
	if !h.borrowed {
		if h.nonce == "" {
			nonce := rand.Text()
			if _, err := h.e.f.WriteAt(appendRecord(nil, h.purpose, h.acquired, nonce), 0); err != nil {
				return pathError("HandOver", h.path, underlying(err))
			}
			h.nonce, h.holder = nonce, true
		}
		proof = strconv.Itoa(os.Getpid()) + ":" + h.nonce
		table.mu.Lock()
		h.e.handedOver = true
		table.mu.Unlock()
	} else {
		// Our lock is the descriptor our own parent gave us: pass that one
		// on, with the proof that came with it.
		table.mu.Lock()
		proof = h.e.proof
		table.mu.Unlock()
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
	item := fmt.Sprintf("%d:%d:%d:%s", childFD, h.e.id.dev, h.e.id.ino, proof)
	cmd.Env = withEnv(cmd.Env, item)
	return nil
}

// inherited looks in handoverEnv for a descriptor of e's file that this
// process inherited, and reports ok when it holds the lock for a holder that
// still holds it: the descriptor is open on this very file (same device and
// inode) and flock(2) grants LOCK_EX|LOCK_NB on it, and then the holder
// record, read after that grant, still names the pid and nonce of the
// hand-over. The caller has just failed to lock e.f, its own description, so
// the lock was held by someone a moment ago; the grant alone does not say
// that it still is, since the lock may have been let go in between, and a
// free lock is granted to any description. A holder clears its record before
// it unlocks, so a record that still carries the nonce after the grant
// proves that the holder had not let go at the grant: the grant was the
// holder's own lock, seen through the shared description.
//
// Without that proof, a grant on the inherited descriptor is a lock that
// nobody else holds: inherited lets it go and reports freed, so the caller
// tries its own descriptor again and owns what it gets. (When the record
// cannot be read at all, the lock is left as it is and neither is reported:
// the holder may still hold it.) ok also gives the descriptor, marked
// close-on-exec so that it does not leak further than this process, and
// the proof to hand on.
func inherited(e *entry) (fd int, proof string, ok, freed bool) {
	v := os.Getenv(handoverEnv)
	if v == "" {
		return -1, "", false, false
	}
	for item := range strings.SplitSeq(v, ",") {
		parts := strings.Split(item, ":")
		if len(parts) != 5 {
			continue
		}
		fd, err1 := strconv.Atoi(parts[0])
		dev, err2 := strconv.ParseUint(parts[1], 10, 64)
		ino, err3 := strconv.ParseUint(parts[2], 10, 64)
		pid, err4 := strconv.Atoi(parts[3])
		nonce := parts[4]
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || nonce == "" ||
			fd < 3 || dev != e.id.dev || ino != e.id.ino {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
			uint64(st.Dev) != e.id.dev || uint64(st.Ino) != e.id.ino {
			continue
		}
		if lockFD(uintptr(fd), false) != nil {
			continue
		}
		rec, err := readRecord(e.f) // the same file as fd, checked above
		if err != nil {
			continue
		}
		if rec == nil || rec.PID != pid || rec.Handover != nonce {
			unlockFD(uintptr(fd))
			freed = true
			continue
		}
		unix.CloseOnExec(fd)
		return fd, parts[3] + ":" + nonce, true, false
	}
	return -1, "", false, freed
}

// withEnv returns env (or this process's environment when env is nil) with
// item appended to the handoverEnv list.
func withEnv(env []string, item string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	prev := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, handoverEnv+"="); ok {
			prev = v
			continue
		}
		out = append(out, kv)
	}
	if prev != "" {
		item = prev + "," + item
	}
	return append(out, handoverEnv+"="+item)
}
