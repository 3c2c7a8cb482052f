// Package staletemp names the temporary files of the engine's locked
// writes, so that the next writer under the same lock finds what a dead
// writer left by its name alone, without reading the directory.
//
// A write stages its replacement under a hidden name in the target's
// directory and renames it over the target; a process killed in between (by
// SIGKILL, an OOM kill, a power loss) leaves that temporary file behind. The
// engine's writes hold a lock, and name their temporary file after the target
// and the lock file ([Names], [Key]): "." + the target's name + "." + 16
// hexadecimal digits + "-0.tmp" or "-1.tmp", such as
// ".deferred-work.md.3f9c0a1b2d4e5f60-0.tmp". Only a holder of that lock
// file ever makes a file of these names, one holder at a time, so under the
// lock a file of one of them is a dead writer's and may be removed. The
// reasoning, and how package atomicstage uses the two names so that no
// writer ever writes into a file it did not create, is in docs/design.md,
// "Temporary files".
//
// No other file has these names: the name ends in a suffix of fixed length,
// so for a target name of up to [osfile.MaxTempBase] bytes the name gives the
// target's name back exactly; a longer target name is cut to that many bytes
// (at a character boundary), and two such targets sharing their first ones
// are told apart by the hexadecimal digits, which hash the whole name with
// the key. A user's file such as a dated backup ".sprint-status.yaml20260101",
// a temporary file of atomicfile.WriteFile (renameio's "." + name + a number,
// or ".<name>.tmp-<random>") and bmad-loop's ("<name>.<random>.tmp") never
// have one.
package staletemp

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"github.com/filetxn/filetxn/internal/osfile"
)

// keyDigits is how many hexadecimal digits of the hash a name carries.
const keyDigits = 16

// Names returns the two temporary names of a target named base (its last
// element, symbolic links followed) for the holders of the lock whose [Key]
// is key. They differ in their last digit only. Names does no I/O.
func Names(base, key string) [2]string {
	// One buffer on the stack for the hash's input and then for the name:
	// a name costs its two strings and nothing else.
	var buf [512]byte
	b := append(append(append(buf[:0], key...), 0), base...)
	sum := sha256.Sum256(b)
	b = append(append(append(buf[:0], '.'), cut(base)...), '.')
	b = hex.AppendEncode(b, sum[:keyDigits/2])
	b = append(b, "-0.tmp"...)
	first := string(b)
	b[len(b)-len("0.tmp")] = '1'
	return [2]string{first, string(b)}
}

// cut returns base's first osfile.MaxTempBase bytes, less a character
// split there, so that a name stays within the usual 255-byte limit.
func cut(base string) string {
	if len(base) <= osfile.MaxTempBase {
		return base
	}
	n := osfile.MaxTempBase
	for n > 0 && !utf8.RuneStart(base[n]) {
		n--
	}
	return base[:n]
}
