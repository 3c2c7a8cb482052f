//go:build unix

package fsys

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestTempPermNeverWidens checks that a temporary file is created with no
// permission the final file will not grant (beyond its owner's read and
// write), and, as root, with no group bit that the other class lacks: until
// keepMeta gives it the target's group it belongs to root's group or a
// setgid directory's, whose members must get no more than anyone. Ablation:
// creating it with the target's bits as they are (as root) makes 0660, 0464
// and 0640 red.
func TestTempPermNeverWidens(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []fs.FileMode{0o600, 0o644, 0o660, 0o464, 0o640, 0o777, 0o200} {
		path := filepath.Join(dir, mode.String())
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		perm := tempPerm(fi)
		if extra := perm &^ (mode | 0o600); extra != 0 {
			t.Errorf("tempPerm(%v) = %v: grants %v the target does not", mode, perm, extra)
		}
		if perm&0o600 != 0o600 {
			t.Errorf("tempPerm(%v) = %v: the owner cannot read and write it", mode, perm)
		}
		if group, other := perm&0o070>>3, perm&0o007; euid() == 0 && group&^other != 0 {
			t.Errorf("tempPerm(%v) as root = %v: grants its group what it denies others, before the group is the target's", mode, perm)
		}
	}
}
