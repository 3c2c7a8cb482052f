// Package proc is what the module knows of processes and goroutines: whether
// the process that recorded its pid is still running, and the identity of
// goroutines by which package lock judges re-entry.
//
// # Processes (proc.go)
//
// Gone tells whether the process that recorded its pid in a file is
// still running, for state that marks work in progress with the pid of the
// process doing it.
//
// A pid alone cannot say that: once a process exits, its pid is free for any
// other process. So a process records its pid together with a start token
// ([Self]), which stands for the moment the process started as the operating
// system reports it, and [Gone] compares the token of the process that has
// the pid now with the recorded one.
//
// Where the start comes from: Linux, field 22 of /proc/<pid>/stat (clock
// ticks since boot) with the boot's id (/proc/sys/kernel/random/boot_id), so
// a token survives clock changes and never matches a process of another
// boot; macOS, the start time of sysctl kern.proc.pid; Windows, the creation
// time of GetProcessTimes. Elsewhere there is no token, and a live pid
// counts as the process that recorded it.
//
// Every answer is about this host: a pid recorded on another machine means
// nothing here. When the system cannot tell (no /proc, a process of another
// user whose start is hidden), the answers lean to "still running", so that
// a caller never takes a live process for a dead one.
//
// # Goroutines (id.go, loan.go)
//
// ID and Loan are the identity of goroutines for package lock, which
// judges re-entry by goroutine: the id of the calling goroutine, and loans,
// by which a goroutine that does work its lock holder waits for (the fn of
// a follower in the engine's group commit) counts as that holder as well.
package proc
