//go:build unix && !linux && !darwin

package proc

import "golang.org/x/sys/unix"

// query asks kill(2) whether pid exists. These systems give no start token
// here, so a live pid counts as the process that recorded it; EPERM (a
// process of another user) is a live one.
func query(pid int) (state, string) {
	if err := unix.Kill(pid, 0); err == unix.ESRCH {
		return gone, ""
	}
	return alive, ""
}
