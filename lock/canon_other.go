//go:build !windows && !darwin

package lock

// canonical returns resolved unchanged: names are case-sensitive here (Linux,
// the BSDs), and the resolved path, with its symlinks resolved, is the name
// bmad-loop hashes (Python's realpath semantics).
func canonical(resolved string) string { return resolved }
