package proc

import (
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// ID returns the id of the calling goroutine.
//
// Go deliberately hides goroutine identity, but re-entry detection needs it:
// the question "does the goroutine asking for this lock already hold it?" has
// no other answer when the second request comes with a fresh context, as it
// does when Mutate is called from inside a Mutate callback.
//
// Where the goroutine's runtime descriptor (the g) can be reached from
// assembly (gc on amd64 and arm64: getg), the id is read from it, a load
// that costs the same at any stack depth. Where the id lies in the g is not
// hard-coded: goidOffset finds it once per process by comparing the g's
// words with the id printed in stack traces, in several goroutines, and uses
// the one word that matches in all of them; if none or more than one does
// (a runtime whose g no longer holds the id as a 64-bit word near its start),
// every call falls back to stackGoid, which is slower but exact. A new Go
// release can therefore cost speed, not correctness. See
// BenchmarkGoroutineID.
func ID() int64 {
	if off := goidOffset(); off >= 0 {
		return *(*int64)(unsafe.Add(getg(), off))
	}
	return stackGoid()
}

// stackGoid returns the id of the calling goroutine, parsed from the first
// line of its own stack trace ("goroutine 18 [running]:"), a format that has
// not changed since Go 1.0 and that the testing and net/http/pprof packages
// also rely on. It costs a walk of the goroutine's stack, which grows with
// its depth.
func stackGoid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		panic("goroutine: unexpected stack trace header " + strconv.Quote(string(b)))
	}
	b = b[len(prefix):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, err := strconv.ParseInt(string(b[:i]), 10, 64)
	if err != nil {
		panic("goroutine: unexpected stack trace header: " + err.Error())
	}
	return id
}

// gScan is how many bytes from the start of the g goidOffset examines. The
// id has sat within the first 160 bytes of the g since Go 1.4, and every g
// is larger than this.
const gScan = 256

// goidOffset returns where the goroutine id lies in the g, or -1 when it is
// not known (no getg here, or no single word that holds the id in every
// goroutine examined): then ID parses stack traces.
var goidOffset = sync.OnceValue(func() int {
	if getg() == nil {
		return -1
	}
	found := goidCandidates(nil)
	// Other goroutines, whose ids differ from this one's and from each
	// other's: a word that merely happens to hold this goroutine's id
	// does not hold theirs.
	for range 3 {
		c := make(chan []int)
		go func() { c <- goidCandidates(found) }()
		found = <-c
	}
	if len(found) != 1 {
		return -1
	}
	return found[0]
})

// goidCandidates returns the offsets in the calling goroutine's g, among
// within (all multiples of 8 below gScan when within is nil), of the 64-bit
// words that hold the goroutine's id.
func goidCandidates(within []int) []int {
	g, id := getg(), stackGoid()
	var out []int
	check := func(off int) {
		if *(*int64)(unsafe.Add(g, off)) == id {
			out = append(out, off)
		}
	}
	if within == nil {
		for off := 0; off < gScan; off += 8 {
			check(off)
		}
	}
	for _, off := range within {
		check(off)
	}
	return out
}
