package proc

import (
	"bytes"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// query asks kill(2) whether pid exists, then /proc/<pid>/stat for its
// state and start. A zombie (state Z, or X while it is being reaped) has
// exited: only its exit status is left. Field 22, starttime, counts clock
// ticks since boot, so it cannot move when the wall clock is set; the boot
// id keeps a token from matching a process of another boot.
//
// A missing /proc/<pid> means a missing process only when kill(2) could
// signal it: a process of another user (EPERM) is hidden from /proc under
// hidepid=, yet alive.
func query(pid int) (state, string) {
	kerr := unix.Kill(pid, 0)
	if kerr == unix.ESRCH {
		return gone, ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) && kerr == nil && procMounted() {
			return gone, "" // it exited between the two calls
		}
		return alive, ""
	}
	st, start, ok := parseStat(b)
	if !ok {
		return alive, ""
	}
	if st == 'Z' || st == 'X' {
		return gone, ""
	}
	return alive, "linux:" + bootID() + ":" + start
}

// parseStat returns the state (field 3) and the start time (field 22) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so the fields are counted from
// the last ')'.
func parseStat(b []byte) (st byte, start string, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, "", false
	}
	if _, err := strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return 0, "", false
	}
	return f[0][0], string(f[19]), true
}

// procMounted reports whether /proc shows this process, that is whether a
// missing /proc/<pid> means a missing process.
var procMounted = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
})

// bootID is the kernel's id of this boot, "" when it cannot be read.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
})
