package proc

import (
	"os"
	"strings"
	"sync"
)

// state is what the system says about a pid.
type state int

const (
	unknown state = iota // the system does not say: count it as alive
	alive                // a process has the pid (not a zombie)
	gone                 // no process has the pid, or only a zombie
)

// Start returns the start token of the process pid: equal tokens for one pid
// mean one process, different ones different processes. It returns "" when
// no process has the pid, or when the system does not tell its start. It
// does not block.
func Start(pid int) string {
	if pid <= 0 {
		return ""
	}
	st, tok := query(pid)
	if st == gone {
		return ""
	}
	return tok
}

// Self returns the start token of the calling process, as Start(os.Getpid()),
// read once per process.
func Self() string { return self() }

var self = sync.OnceValue(func() string { return Start(os.Getpid()) })

// Gone reports whether the process that recorded pid and start (a token from
// Start or Self, "" when it had none) has certainly exited: no process has
// the pid now, the one that has it is a zombie, or it has another start
// token. It reports false whenever the system cannot tell, and for a pid
// that is not positive. It does not block.
func Gone(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	st, tok := query(pid)
	switch st {
	case gone:
		return true
	case alive:
		return start != "" && tok != "" && !sameStart(tok, start)
	}
	return false
}

// sameStart reports whether two start tokens stand for one start. A Linux
// token made where the boot id could not be read ("linux::<ticks>") matches
// on the start time alone: a process that could not read the boot id must
// not make a live runner look like another process.
func sameStart(a, b string) bool {
	if a == b {
		return true
	}
	ab, at, ok1 := linuxToken(a)
	bb, bt, ok2 := linuxToken(b)
	return ok1 && ok2 && at == bt && (ab == "" || bb == "")
}

// linuxToken splits "linux:<boot id>:<ticks>".
func linuxToken(tok string) (boot, ticks string, ok bool) {
	rest, ok := strings.CutPrefix(tok, "linux:")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}
