package lock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unicode/utf8"
)

// SidecarPath returns the lock file <stateRoot>/locks/<h>-<base>.lock that
// guards target, where <h> is the first 16 lowercase hex digits of the SHA-256
// of target's absolute path with symlinks resolved as far as they exist, and
// <base> the resolved base name, cut to its first 233 bytes (fewer, not to
// split a UTF-8 character) so that the name fits 255. Symlinked, relative and
// dot-dot spellings of one file share one lock, kept out of the data
// directory's "git add -A"; it is bmad-loop's naming (lock_path_for), so a Go
// and a bmad-loop process sharing a state root exclude each other. On Windows
// and macOS the existing part of the path is hashed as the file system spells
// it, so C:\Proj\x.md and c:\proj\X.MD share one lock (8.3 names and junctions
// resolved on Windows, as Python's Path.resolve(); on macOS, Python agrees for
// a path spelled as recorded), and a path spelled as recorded, through no
// junction, names the sidecar it did before; elsewhere it is hashed as is.
//
// SidecarPath creates nothing and does not block. It costs an lstat per
// element of the path (one openat2 on Linux without links), and on Windows and
// macOS an open of the file, or of each missing element and the directory that
// exists. It fails, with an *fs.PathError naming target, only for an empty
// stateRoot, an unreadable working directory, or a target that cannot be
// resolved: over 255 symlink hops (matching syscall.ELOOP), an unreadable link.
func SidecarPath(stateRoot, target string) (string, error) {
	if stateRoot == "" {
		return "", &fs.PathError{Op: "SidecarPath", Path: target, Err: errors.New("empty state root")}
	}
	resolved, err := resolve(target)
	if err != nil {
		return "", &fs.PathError{Op: "SidecarPath", Path: target, Err: err}
	}
	resolved = canonical(resolved)
	sum := sha256.Sum256([]byte(resolved))
	name := hex.EncodeToString(sum[:8]) + "-" + shortBase(filepath.Base(resolved)) + ".lock"
	return filepath.Join(stateRoot, "locks", name), nil
}

// maxName is the longest file name, in bytes, that the common file systems
// accept (NAME_MAX on Linux and the BSDs; on Windows the limit is 255 UTF-16
// units, which a name of at most 255 UTF-8 bytes never exceeds).
const maxName = 255

// shortBase returns base, cut to the longest prefix that fits the sidecar
// name "<16 hex>-<base>.lock" into maxName bytes without splitting a UTF-8
// character. A base that fits is returned unchanged, so such names keep
// bmad-loop's exact formula.
func shortBase(base string) string {
	const room = maxName - len("0123456789abcdef-") - len(".lock")
	if len(base) <= room {
		return base
	}
	n := room
	for n > 0 && !utf8.RuneStart(base[n]) {
		n--
	}
	return base[:n]
}

// resolve makes path absolute and resolves symlinks in it as far as the
// components exist, the way Python's Path.resolve() (non-strict) does: a
// dangling link is followed to the path it names, and components that do not
// exist are kept as written.
//
// On Unix the path is not cleaned first: the kernel applies ".." to the
// directory that the preceding components resolve to, so "link/../x" names
// the x beside the link's target, and a lexical clean (filepath.Abs) would
// name another file. resolveAbs walks "." and ".." itself. Windows applies
// ".." lexically, so filepath.Abs is right there.
func resolve(path string) (string, error) {
	if runtime.GOOS == "windows" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		return resolveAbs(abs, 0)
	}
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		path = wd + string(filepath.Separator) + path
	}
	if linkFree(path) {
		// Nothing to resolve: with no link on the way, the kernel's ".." is
		// the lexical one.
		return filepath.Clean(path), nil
	}
	return resolveAbs(path, 0)
}

// maxLinks bounds symlink hops, as the kernel's ELOOP limit does.
const maxLinks = 255

func resolveAbs(abs string, hops int) (string, error) {
	vol := filepath.VolumeName(abs)
	rest := abs[len(vol):]
	done := vol + string(filepath.Separator)
	parts := strings.Split(strings.Trim(rest, string(filepath.Separator)), string(filepath.Separator))
	for _, part := range parts {
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, part)
		if link, err := isSymlink(next); err != nil || !link {
			// A name that is not a link is kept as it is, and so is one
			// that does not exist (a later ".." removes it again, as
			// Python's resolve does).
			done = next
			continue
		}
		if hops++; hops > maxLinks {
			return "", fmt.Errorf("%s: %w", next, syscall.ELOOP)
		}
		link, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			if runtime.GOOS == "windows" {
				link = filepath.Join(done, link)
			} else {
				link = done + string(filepath.Separator) + link // no lexical clean: see resolve
			}
		}
		target, err := resolveAbs(link, hops)
		if err != nil {
			return "", err
		}
		done = target
	}
	return filepath.Clean(done), nil
}
