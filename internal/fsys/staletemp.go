package fsys

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
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
	b = append(append(append(buf[:0], '.'), Cut(base)...), '.')
	b = hex.AppendEncode(b, sum[:keyDigits/2])
	b = append(b, "-0.tmp"...)
	first := string(b)
	b[len(b)-len("0.tmp")] = '1'
	return [2]string{first, string(b)}
}

// Cut returns base's first MaxTempBase bytes, less a character split
// there, so that a name made from it stays within the usual 255-byte limit.
func Cut(base string) string {
	if len(base) <= MaxTempBase {
		return base
	}
	n := MaxTempBase
	for n > 0 && !utf8.RuneStart(base[n]) {
		n--
	}
	return base[:n]
}
