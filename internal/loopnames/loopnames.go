// Package loopnames names the documents of a loopstate loop kept on a
// backend (docs/formats/loopstate.md, "On a backend"), so that loopstate
// and the tools that copy a loop in and out of a backend name them alike.
package loopnames

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"
)

// TicksDir is the directory, beside the loops under a root, of the
// loops' tick lines.
const TicksDir = "ticks"

// Doc returns the name in a backend of the document at path p, as
// filetxn's Store.Name names a path: cleaned, with forward slashes.
func Doc(p string) string { return filepath.ToSlash(filepath.Clean(p)) }

// TicksPrefix returns the prefix of the names of the tick lines of the
// loop name in the root dir; it ends in "/".
func TicksPrefix(dir, name string) string {
	return Doc(filepath.Join(dir, TicksDir, name)) + "/"
}

// Ticks returns n fresh names under prefix (see TicksPrefix) for tick
// lines created in one commit at now: they share now and a random part
// and sort in the order given, so that a backend, which lists the
// documents of one commit in the order of their names, lists them so.
// The index has three digits, more when n needs them.
func Ticks(prefix string, now time.Time, n int) []string {
	var rnd [8]byte
	rand.Read(rnd[:])
	id := now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
	width := max(3, len(fmt.Sprint(n-1)))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%s-%0*d", prefix, id, width, i)
	}
	return names
}

// The files of a loop on files, in <root>/loops/<name>/, whose names its
// documents on a backend keep.
const (
	Loops   = "loops"       // the directory of loops under a root
	State   = ".state.loop" // the state
	Lock    = ".state.lock" // the lock file, the name of the lock on a backend
	TickLog = "ticks.jsonl" // the tick log, on files only
)
