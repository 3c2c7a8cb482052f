//go:build windows || darwin

package lock

import (
	"os"
	"path/filepath"
)

// canonical returns resolved (absolute, clean, links resolved) spelled as
// the file system records it, for the systems whose file systems compare
// names without regard to case by default (Windows; macOS, APFS and HFS+), so
// that the spellings of one file in any case share one sidecar: the longest
// leading part of resolved that exists (the file itself, or its nearest
// existing ancestor directory) is named by the system (recorded, per OS),
// and the elements after it, which do not exist yet, are appended as
// spelled. When nothing on the way can be named, resolved is returned as it
// is. It costs one recorded for an existing file, one more open attempt per
// missing element.
func canonical(resolved string) string {
	rest := ""
	for p := resolved; ; {
		if name, ok := recorded(p); ok {
			switch {
			case rest == "":
				return name
			case os.IsPathSeparator(name[len(name)-1]):
				return name + rest
			}
			return name + string(filepath.Separator) + rest
		}
		dir := filepath.Dir(p)
		if dir == p {
			return resolved
		}
		if rest == "" {
			rest = filepath.Base(p)
		} else {
			rest = filepath.Base(p) + string(filepath.Separator) + rest
		}
		p = dir
	}
}
