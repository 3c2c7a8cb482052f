package proc

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// szomb is p_stat of a zombie (sys/proc.h).
const szomb = 5

// query asks kill(2) whether pid exists, then sysctl kern.proc.pid for its
// state and start time (microseconds, as the kernel recorded it at fork).
func query(pid int) (state, string) {
	if err := unix.Kill(pid, 0); err == unix.ESRCH {
		return gone, ""
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return alive, ""
	}
	if kp.Proc.P_stat == szomb {
		return gone, ""
	}
	t := kp.Proc.P_starttime
	return alive, "darwin:" + strconv.FormatInt(int64(t.Sec), 10) + "." + strconv.FormatInt(int64(t.Usec), 10)
}
