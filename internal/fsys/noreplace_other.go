//go:build !linux && !darwin && !windows

package fsys

// renameNoReplace has no kernel support here: see renameFallback.
func renameNoReplace(oldpath, newpath string) error {
	return renameFallback(oldpath, newpath)
}
