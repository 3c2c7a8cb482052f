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
	item := fmt.Sprintf("%d:%d:%d:%s:%d", childFD, h.e.id.dev, h.e.id.ino, proof, os.Getpid())
	cmd.Env = withEnv(cmd.Env, item)
	return nil
}

// scanFDs bounds the descriptors a child looks through for a handed-over
// lock that is not at the descriptor its variable names: a child inherits
// descriptors 3 to 2+len(cmd.ExtraFiles), and none beyond 1023 in any
// reasonable command.
const scanFDs = 1024

// A handoverItem is one entry of handoverEnv, "fd:dev:ino:pid:nonce:from":
// the word of process from, which ran HandOver, that its child's descriptor
// fd holds the lock on the file dev:ino for the holder pid, whose holder
// record carries nonce. (An entry without from, as HandOver wrote it before
// it had one, is read with from 0.)
type handoverItem struct {
	fd        int
	dev, ino  uint64
	pid, from int
	nonce     string
}

// parseItem parses one entry of handoverEnv, reporting false for anything
// malformed.
func parseItem(s string) (handoverItem, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 5 && len(parts) != 6 {
		return handoverItem{}, false
	}
	var it handoverItem
	var errs [5]error
	it.fd, errs[0] = strconv.Atoi(parts[0])
	it.dev, errs[1] = strconv.ParseUint(parts[1], 10, 64)
	it.ino, errs[2] = strconv.ParseUint(parts[2], 10, 64)
	it.pid, errs[3] = strconv.Atoi(parts[3])
	it.nonce = parts[4]
	if len(parts) == 6 {
		it.from, errs[4] = strconv.Atoi(parts[5])
	}
	return it, errors.Join(errs[:]...) == nil && it.nonce != "" && it.fd >= 3
}

// proof is the "pid:nonce" that a borrowed handle hands on.
func (it handoverItem) proof() string { return strconv.Itoa(it.pid) + ":" + it.nonce }

// A proofResult is what prove found at a descriptor.
type proofResult int

const (
	notIt proofResult = iota // not a description of the file holding its lock, or undecided
	held                     // the hand-over's lock, still held by its holder
	free                     // the lock was free: prove took it and let it go again
)

// prove looks at descriptor fd for e's lock held for the hand-over it: fd is
// open on this very file (same device and inode) and flock(2) grants
// LOCK_EX|LOCK_NB on it, and then the holder record, read after that grant,
// still names the pid and nonce of the hand-over. The caller has just failed
// to lock e.f, its own description, so the lock was held by someone a moment
// ago; the grant alone does not say that it still is, since the lock may
// have been let go in between, and a free lock is granted to any
// description. A holder clears its record before it unlocks, so a record
// that still carries the nonce after the grant proves that the holder had
// not let go at the grant: the grant was the holder's own lock, seen through
// the shared description.
//
// Without that proof, a grant on fd is a lock that nobody else holds: prove
// lets it go and reports free, so the caller tries its own descriptor again
// and owns what it gets. When the record cannot be read at all, the lock is
// left as it is and notIt reported: the holder may still hold it.
//
// prove works on a duplicate of fd, so that a descriptor closed and reused
// by another goroutine meanwhile is never locked or unlocked unless it is
// a description of this file.
func prove(e *entry, fd int, it handoverItem) proofResult {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return notIt
	}
	defer unix.Close(d) // the description keeps its lock: fd still has it open
	var st unix.Stat_t
	if unix.Fstat(d, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
		uint64(st.Dev) != e.id.dev || uint64(st.Ino) != e.id.ino {
		return notIt
	}
	if lockFD(uintptr(d), false) != nil {
		return notIt
	}
	rec, err := readRecord(e.f) // the same file as d, checked above
	if err != nil {
		return notIt
	}
	if rec == nil || rec.PID != it.pid || rec.Handover != it.nonce {
		unlockFD(uintptr(d))
		return free
	}
	return held
}

// inherited looks in handoverEnv for a descriptor of e's file that this
// process inherited, and reports ok when one holds the lock for a holder
// that still holds it (see prove), with the descriptor, marked close-on-exec
// so that it does not leak further than this process, and the proof to hand
// on. It reports freed when a descriptor it looked at was granted a lock
// that nobody held any more: the caller then tries its own descriptor again.
//
// The descriptor the variable names is looked at first. When that one does
// not hold the lock, the variable comes from this process's parent, and the
// holder record still carries the hand-over's pid and nonce (the holder
// holds the lock for this process right now), the parent's cmd.ExtraFiles
// was changed after HandOver: inherited then looks through the other
// descriptors below scanFDs, so that a file moved in ExtraFiles is still
// found, and when none holds the lock it returns an error wrapping
// ErrHandOverBroken: waiting would wait for the parent, which holds the lock
// for this process. A variable from further up (a grandchild that inherited
// the environment but not the hand-over) is not this process's to act on:
// only its named descriptor is looked at, and otherwise the process locks
// like any other.
func inherited(e *entry) (fd int, proof string, ok, freed bool, err error) {
	v := os.Getenv(handoverEnv)
	if v == "" {
		return -1, "", false, false, nil
	}
	for s := range strings.SplitSeq(v, ",") {
		it, good := parseItem(s)
		if !good || it.dev != e.id.dev || it.ino != e.id.ino {
			continue
		}
		switch prove(e, it.fd, it) {
		case held:
			unix.CloseOnExec(it.fd)
			return it.fd, it.proof(), true, false, nil
		case free:
			freed = true
			continue
		}
		if it.from == 0 || it.from != os.Getppid() {
			continue
		}
		if rec, rerr := readRecord(e.f); rerr != nil || rec == nil || rec.PID != it.pid || rec.Handover != it.nonce {
			continue // the hand-over is over, or cannot be told
		}
		own := int(e.f.Fd())
		for cand := 3; cand < scanFDs; cand++ {
			if cand == it.fd || cand == own {
				continue
			}
			switch prove(e, cand, it) {
			case held:
				unix.CloseOnExec(cand)
				return cand, it.proof(), true, false, nil
			case free:
				return -1, "", false, true, nil
			}
		}
		err = fmt.Errorf("%w: pid %d holds it for this process, but descriptor %d, which HandOver named, does not (was cmd.ExtraFiles changed after HandOver?)",
			ErrHandOverBroken, it.pid, it.fd)
	}
	return -1, "", false, freed, err
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
