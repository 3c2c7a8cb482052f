package lock

import (
	"runtime"
	"strconv"
)

// goid returns the id of the calling goroutine.
//
// Go deliberately hides goroutine identity, but re-entry detection needs it:
// the question "does the goroutine asking for this lock already hold it?" has
// no other answer when the second request comes with a fresh context, as it
// does when Mutate is called from inside a Mutate callback. The id is parsed
// from the first line of the goroutine's own stack trace ("goroutine 18
// [running]:"), a format that has not changed since Go 1.0 and that the
// testing and net/http/pprof packages also rely on. It costs a walk of the
// goroutine's stack, which grows with its depth, and is computed once per
// acquisition.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		panic("lock: unexpected stack trace header " + strconv.Quote(string(b)))
	}
	b = b[len(prefix):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, err := strconv.ParseInt(string(b[:i]), 10, 64)
	if err != nil {
		panic("lock: unexpected stack trace header: " + err.Error())
	}
	return id
}
