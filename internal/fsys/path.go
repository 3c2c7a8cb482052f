package fsys

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// maxLinkHops bounds the symbolic links followed for one target, as
// [filepath.EvalSymlinks] does; a longer chain is almost surely a loop.
const maxLinkHops = 255

// resolve follows symbolic links in the last element of path until it reaches
// something that is not a link, and returns that path and its FileInfo. When
// nothing exists there (a new file, or a dangling link's target) the FileInfo is
// nil and the error too. Directories along the way are left to the kernel, which
// resolves them in every later system call anyway.
//
// The returned path is deliberately not cleaned: for a relative link "l -> ../f"
// inside a symlinked directory d, "d/../f" is the kernel's parent of d's real
// directory, while the lexical clean of it is d's parent as spelled. Only the
// first is where the link points.
func resolve(path string) (string, fs.FileInfo, error) {
	p := path
	for range maxLinkHops {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil, nil
		}
		if err != nil {
			return "", nil, UnwrapOS(err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, fi, nil
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", nil, UnwrapOS(err)
		}
		switch {
		case filepath.IsAbs(dest):
			p = dest
		case dest != "" && os.IsPathSeparator(dest[0]):
			// Rooted but without a volume: only possible on Windows.
			p = filepath.VolumeName(p) + dest
		default:
			p = joinRaw(dirRaw(p), dest)
		}
	}
	return "", nil, errLinkLoop
}

// Target returns the file that a write of path replaces, path with the
// symbolic links of its last element followed as Create follows them
// (whether or not anything exists there), and the directory that holds it,
// both uncleaned (see resolve). A caller that removes what a write would
// have replaced removes target and syncs dir. Its errors are those of
// following the links (a loop of more than 255, a link that cannot be
// read).
func Target(path string) (target, dir string, err error) {
	target, _, err = resolve(path)
	if err != nil {
		return "", "", err
	}
	return target, dirRaw(target), nil
}

// errLinkLoop reports a chain of more than maxLinkHops symbolic links.
var errLinkLoop = errors.New("too many levels of symbolic links")

// dirRaw is [filepath.Dir] without the final Clean: it drops the last element
// and the separators before it, and nothing else. See resolve for why.
func dirRaw(p string) string {
	vol := filepath.VolumeName(p)
	i := len(p) - 1
	for i >= len(vol) && !os.IsPathSeparator(p[i]) {
		i--
	}
	if i < len(vol) { // no separator: "f" or "C:f"
		return vol + "."
	}
	d := p[:i]
	for len(d) > len(vol) && os.IsPathSeparator(d[len(d)-1]) {
		d = d[:len(d)-1]
	}
	if len(d) == len(vol) { // the root: "/f" or `C:\f`
		return p[:len(vol)+1]
	}
	return d
}

// joinRaw is [filepath.Join] without the Clean.
func joinRaw(dir, name string) string {
	if dir != "" && os.IsPathSeparator(dir[len(dir)-1]) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}
