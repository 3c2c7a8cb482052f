// Package staletemp removes the temporary files that package atomicfile
// leaves beside a target when its writer dies between staging and rename.
//
// atomicfile stages a replacement under a hidden name in the target's
// directory and renames it over the target; a process killed in between (by
// SIGKILL, a power loss, an OOM kill) leaves that temporary file behind, and
// nothing else ever removes it. Only the holder of the lock that every writer
// of a target takes can be writing a temporary file for that target, so the
// holder may remove the others: [RemoveFor] is called by the engine, under the
// lock, after each write it publishes.
//
// The naming matched here is atomicfile's (see its package doc), and the
// tests of this package check it against temporary files atomicfile really
// makes:
//
//   - renameio's, outside Windows: "." + name + a non-negative int64 in
//     decimal, such as ".deferred-work.md4982630124857716", of at least 13
//     digits (see minRenameioDigits);
//   - atomicfile's own, on Windows and for a name longer than renameio can
//     stage: "." + the name's first 200 bytes (cut at a rune boundary) +
//     ".tmp-" + a uint64 in base 36.
package staletemp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/filetxn/filetxn/internal/osfile"
)

// minRenameioDigits is the fewest digits a renameio temporary name is taken
// to have. renameio writes a random non-negative int64, which has 19 digits
// but for one in ten (18), and fewer than 13 for about one in nine million:
// such a leftover is not removed, which loses nothing. A file of the user's
// named "." + the target's name + a few digits (a backup stamped with a date,
// ".sprint-status.yaml20260101", or with a time in seconds) is then no
// temporary file, and is never removed.
const minRenameioDigits = 13

// maxTempBase is how many bytes of a long target name atomicfile's own
// temporary names keep.
const maxTempBase = osfile.MaxTempBase

// Remove removes, from the directory of the file path finally names (path's
// symbolic links followed), every regular file whose name is one of
// atomicfile's temporary names for that file and could not be a temporary
// file of any other name in the directory. It returns how many it removed.
//
// The caller must hold the lock that every writer of path holds (and have
// checked that it still holds it): a writer of path that is alive holds that
// lock, so every temporary file for path is then a dead writer's. A file of
// any other name is never touched, nor a temporary name that another entry
// of the directory could own: ".log21" is a temporary name of "log" but also
// of "log2", and is left alone while "log2" exists. What this cannot see is a
// file that does not exist yet: while "log2" is being created for the first
// time, its writer's ".log2<n>" looks like a stale temporary file of "log"
// and is removed, so that first write fails (its rename finds no file) and
// nothing is lost or torn. Name files so that none is another's name
// followed by digits, or by ".tmp-", to rule that out.
//
// Removal is best effort: a file that cannot be removed (on Windows, one a
// process still holds open) is skipped, and the first error is returned
// after the rest have been tried. A path that cannot be resolved, or whose
// directory cannot be read, gives that error and removes nothing.
func Remove(path string) (int, error) {
	target, err := resolve(path)
	if err != nil {
		return 0, err
	}
	return RemoveFor(target)
}

// RemoveFor is Remove for target, a path whose last element is not a
// symbolic link (a missing file is fine): the file that atomicfile replaced,
// whose links it resolved before staging beside it. The engine calls it with
// the path atomicfile renamed over, which saves the lstat that Remove makes
// to follow links.
//
// The directory is read once, and in the usual case, no temporary file, that
// is all: the names are tested where the directory's entries lie, with no
// copy. Only when some name is a temporary name of target's is the directory
// listed again, to tell which of them another entry could own.
func RemoveFor(target string) (int, error) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	stale := false
	err := scan(dir, func(name []byte, maybeRegular bool) {
		stale = stale || maybeRegular && isTemp(name, base)
	})
	if err != nil || !stale {
		return 0, err
	}
	f, err := openDir(dir)
	if err != nil {
		return 0, err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return 0, err
	}
	n := 0
	var first error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !isTemp(name, base) || claimed(name, base, entries) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			if first == nil && !errors.Is(err, fs.ErrNotExist) {
				first = err
			}
			continue
		}
		n++
	}
	return n, first
}

// claimed reports whether name is a temporary name of an entry of the
// directory other than base.
func claimed(name, base string, entries []os.DirEntry) bool {
	for _, e := range entries {
		if other := e.Name(); other != base && other != name && isTemp(name, other) {
			return true
		}
	}
	return false
}

// resolve returns path with its symbolic links followed, the file atomicfile
// replaces; a path that is not a link (or does not exist) is itself.
func resolve(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	return filepath.EvalSymlinks(path)
}

// isTemp reports whether name is one of atomicfile's temporary names for a
// target named base (either naming; see the package doc). It takes the name
// as a string or as the bytes of a directory entry, unconverted.
func isTemp[S ~string | ~[]byte](name S, base string) bool {
	if base == "" || len(name) == 0 || name[0] != '.' {
		return false
	}
	if i := 1 + len(base); len(name)-i >= minRenameioDigits && hasPrefixAt(name, 1, base) && isInt63(name, i) {
		return true
	}
	short := cut(base)
	return hasPrefixAt(name, 1, short) && hasPrefixAt(name, 1+len(short), ".tmp-") &&
		isUint64Base36(name, 1+len(short)+len(".tmp-"))
}

// hasPrefixAt reports whether s[i:] begins with prefix.
func hasPrefixAt[S ~string | ~[]byte](s S, i int, prefix string) bool {
	if len(s)-i < len(prefix) {
		return false
	}
	for j := range len(prefix) {
		if s[i+j] != prefix[j] {
			return false
		}
	}
	return true
}

// cut is atomicfile's cut of a long name: its first maxTempBase bytes, less
// a rune split there.
func cut(base string) string {
	if len(base) <= maxTempBase {
		return base
	}
	n := maxTempBase
	for n > 0 && !utf8.RuneStart(base[n]) {
		n--
	}
	return base[:n]
}

// isInt63 reports whether s[i:] is a non-negative int64 as strconv.FormatInt
// writes it in decimal: digits, no sign, no leading zero, at most
// math.MaxInt64.
func isInt63[S ~string | ~[]byte](s S, i int) bool {
	return isNumber(s, i, "9223372036854775807", func(c byte) bool { return '0' <= c && c <= '9' })
}

// isUint64Base36 reports whether s[i:] is a uint64 as strconv.FormatUint
// writes it in base 36: digits and lower-case letters, no leading zero, at
// most math.MaxUint64.
func isUint64Base36[S ~string | ~[]byte](s S, i int) bool {
	return isNumber(s, i, "3w5e11264sgsf", func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' })
}

// isNumber reports whether s[i:] is a number as strconv writes it: digits
// (by isDigit, in increasing order of value, as ASCII orders them), no
// leading zero, and not above largest, the greatest value written the same
// way.
func isNumber[S ~string | ~[]byte](s S, i int, largest string, isDigit func(byte) bool) bool {
	n := len(s) - i
	if n <= 0 || n > len(largest) || (s[i] == '0' && n > 1) {
		return false
	}
	for j := i; j < len(s); j++ {
		if !isDigit(s[j]) {
			return false
		}
	}
	if n < len(largest) {
		return true
	}
	for j := range n { // as long as largest: compare digit by digit
		if s[i+j] != largest[j] {
			return s[i+j] < largest[j]
		}
	}
	return true
}
