package proc

import (
	"errors"
	"strconv"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not exited (STILL_ACTIVE).
const stillActive = 259

// query opens pid with the least access that reads its times. No process
// with the pid gives ERROR_INVALID_PARAMETER; one that exited but whose
// object is still open somewhere has an exit code. The token is the
// creation time, in 100 ns units since 1601.
func query(pid int) (state, string) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return gone, ""
	}
	if err != nil {
		return unknown, "" // access denied: a process we may not look at
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err == nil && code != stillActive {
		return gone, ""
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return alive, ""
	}
	return alive, "windows:" + strconv.FormatInt(created.Nanoseconds()/100, 10)
}
