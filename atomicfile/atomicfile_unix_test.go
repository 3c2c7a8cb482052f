//go:build unix

package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn/atomicfile"
)

// withUmask sets the process umask for the duration of the test. The umask is
// process-wide, which is why no test in this package runs in parallel.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := unix.Umask(mask)
	t.Cleanup(func() { unix.Umask(old) })
}

// TestWriteFileModes checks that a new file gets perm minus the umask and an
// existing file keeps its mode exactly, whatever perm and umask say ("existing
// 0604" would lose its other-read bit to the umask 027 if the mode were applied
// at create time). The temporary file is created with the target's bits (less
// the group's, as root: see tempPerm), so "existing 0640" needs no chmod unless
// the caller is root. Ablations: removing keepMeta's Chmod makes 0604, 0777,
// setuid and setgid red, and 0640 as root (the umask's cut, the group bits or
// the missing special bit is published); its shortcut comparing only the
// permission bits, not setuid, setgid and sticky, makes setuid red.
func TestWriteFileModes(t *testing.T) {
	withUmask(t, 0o027)
	tests := []struct {
		name     string
		existing fs.FileMode // 0: no file before the write
		perm     fs.FileMode
		want     fs.FileMode
	}{
		{name: "new 0666", perm: 0o666, want: 0o640},
		{name: "new 0600", perm: 0o600, want: 0o600},
		{name: "new 0755", perm: 0o755, want: 0o750},
		{name: "existing 0640 written with 0600", existing: 0o640, perm: 0o600, want: 0o640},
		{name: "existing 0604 ignores umask", existing: 0o604, perm: 0o600, want: 0o604},
		{name: "existing 0777", existing: 0o777, perm: 0o600, want: 0o777},
		{name: "existing setuid kept", existing: 0o750 | fs.ModeSetuid, perm: 0o644, want: 0o750 | fs.ModeSetuid},
		{name: "existing setgid kept", existing: 0o755 | fs.ModeSetgid, perm: 0o644, want: 0o755 | fs.ModeSetgid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if tt.existing != 0 {
				writeFile(t, path, "old")
				if err := os.Chmod(path, tt.existing); err != nil {
					t.Fatal(err)
				}
			}
			if err := atomicfile.WriteFile(path, []byte("new"), tt.perm); err != nil {
				t.Fatalf("WriteFile(%q, perm %v) = %v", path, tt.perm, err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			mask := fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
			if got := fi.Mode() & mask; got != tt.want {
				t.Errorf("WriteFile(%q, perm %v) under umask 027: mode = %v, want %v", path, tt.perm, got, tt.want)
			}
		})
	}
}

// TestWriteFileKeepsOwnerAsRoot checks that root keeps an existing file's uid and
// gid. Ablation: removing the Chown in keepMeta makes it red (the file becomes
// root's).
func TestWriteFileKeepsOwnerAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give a file away")
	}
	path := filepath.Join(t.TempDir(), "f")
	writeFile(t, path, "old")
	const uid, gid = 12345, 23456
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatalf("WriteFile(%q) = %v", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != uid || st.Gid != gid {
		t.Errorf("WriteFile(%q): owner = %d:%d, want %d:%d", path, st.Uid, st.Gid, uid, gid)
	}
}

// TestWriteFileFollowsSymlinks checks that links stay links and the file they
// finally name gets the bytes, in that file's directory. Ablations: replacing
// resolve with the identity makes every case red (the link itself is replaced by
// a regular file); using filepath.Join (which cleans) for relative link targets
// makes "relative .. through a symlinked directory" red (the file lands in the
// lexical parent instead of the real one).
func TestWriteFileFollowsSymlinks(t *testing.T) {
	type layout struct {
		write string   // the path handed to WriteFile
		final string   // the regular file that must hold the new bytes
		links []string // paths that must still be symlinks afterwards
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) layout
	}{
		{
			name: "absolute link",
			setup: func(t *testing.T, root string) layout {
				final := filepath.Join(root, "real")
				writeFile(t, final, "old")
				symlink(t, final, filepath.Join(root, "link"))
				return layout{filepath.Join(root, "link"), final, []string{filepath.Join(root, "link")}}
			},
		},
		{
			name: "relative link into another directory",
			setup: func(t *testing.T, root string) layout {
				mkdir(t, filepath.Join(root, "data"))
				mkdir(t, filepath.Join(root, "conf"))
				final := filepath.Join(root, "data", "real")
				writeFile(t, final, "old")
				link := filepath.Join(root, "conf", "link")
				symlink(t, "../data/real", link)
				return layout{link, final, []string{link}}
			},
		},
		{
			name: "chain of links",
			setup: func(t *testing.T, root string) layout {
				final := filepath.Join(root, "real")
				writeFile(t, final, "old")
				symlink(t, "real", filepath.Join(root, "l1"))
				symlink(t, "l1", filepath.Join(root, "l2"))
				symlink(t, filepath.Join(root, "l2"), filepath.Join(root, "l3"))
				return layout{filepath.Join(root, "l3"), final, []string{
					filepath.Join(root, "l1"), filepath.Join(root, "l2"), filepath.Join(root, "l3")}}
			},
		},
		{
			name: "dangling link",
			setup: func(t *testing.T, root string) layout {
				link := filepath.Join(root, "link")
				symlink(t, "not-yet", link)
				return layout{link, filepath.Join(root, "not-yet"), []string{link}}
			},
		},
		{
			name: "dangling chain",
			setup: func(t *testing.T, root string) layout {
				symlink(t, "l1", filepath.Join(root, "l2"))
				symlink(t, "not-yet", filepath.Join(root, "l1"))
				return layout{filepath.Join(root, "l2"), filepath.Join(root, "not-yet"),
					[]string{filepath.Join(root, "l1"), filepath.Join(root, "l2")}}
			},
		},
		{
			// root/alias -> real/sub, and real/sub/link -> ../f. Through the
			// alias, the kernel reads alias/../f as real/f; a lexical clean
			// would say root/f.
			name: "relative .. through a symlinked directory",
			setup: func(t *testing.T, root string) layout {
				mkdir(t, filepath.Join(root, "real", "sub"))
				symlink(t, filepath.Join("real", "sub"), filepath.Join(root, "alias"))
				symlink(t, "../f", filepath.Join(root, "real", "sub", "link"))
				return layout{filepath.Join(root, "alias", "link"), filepath.Join(root, "real", "f"),
					[]string{filepath.Join(root, "real", "sub", "link")}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			l := tt.setup(t, root)
			targets := map[string]string{}
			for _, link := range l.links {
				targets[link] = readlink(t, link)
			}
			if err := atomicfile.WriteFile(l.write, []byte("new"), 0o644); err != nil {
				t.Fatalf("WriteFile(%q) = %v", l.write, err)
			}
			if got := readFile(t, l.final); got != "new" {
				t.Errorf("WriteFile(%q): %s = %q, want %q", l.write, l.final, got, "new")
			}
			for _, link := range l.links {
				if got := readlink(t, link); got != targets[link] {
					t.Errorf("WriteFile(%q): link %s -> %q, want -> %q", l.write, link, got, targets[link])
				}
			}
			if _, err := os.Lstat(filepath.Join(root, "f")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("WriteFile(%q) created %s (the lexical parent), want nothing there", l.write, filepath.Join(root, "f"))
			}
			assertNoTemps(t, filepath.Dir(l.final))
		})
	}
}

// TestSymlinkedTargetIsChecked checks that the read-only and regular-file checks
// apply to the file a link resolves to, and that a loop of links is an error
// rather than a hang.
func TestSymlinkedTargetIsChecked(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string // returns the link to write
		want  error                                  // nil: any error
	}{
		{
			name: "link to read-only file",
			setup: func(t *testing.T, root string) string {
				writeFile(t, filepath.Join(root, "ro"), "old")
				if err := os.Chmod(filepath.Join(root, "ro"), 0o444); err != nil {
					t.Fatal(err)
				}
				symlink(t, "ro", filepath.Join(root, "link"))
				return filepath.Join(root, "link")
			},
			want: fs.ErrPermission,
		},
		{
			name: "link to directory",
			setup: func(t *testing.T, root string) string {
				mkdir(t, filepath.Join(root, "d"))
				symlink(t, "d", filepath.Join(root, "link"))
				return filepath.Join(root, "link")
			},
			want: atomicfile.ErrNotRegular,
		},
		{
			name: "loop",
			setup: func(t *testing.T, root string) string {
				symlink(t, "b", filepath.Join(root, "a"))
				symlink(t, "a", filepath.Join(root, "b"))
				return filepath.Join(root, "a")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			link := tt.setup(t, root)
			err := atomicfile.WriteFile(link, []byte("new"), 0o644)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("WriteFile(%q) = %v, want an error wrapping %v", link, err, tt.want)
			}
			assertPathError(t, err, "WriteFile", link)
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("after refused WriteFile(%q), Lstat = %v, %v; want a symlink", link, fi, err)
			}
			assertNoTemps(t, root)
		})
	}
}

// TestWriteFileRefusesFifo checks that a named pipe is refused and stays a pipe.
// Ablation: without the IsRegular check the rename replaces the pipe with a
// regular file (and the writability probe, were it not O_NONBLOCK, would hang
// waiting for a reader).
func TestWriteFileRefusesFifo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pipe")
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Skipf("Mkfifo: %v", err)
	}
	err := atomicfile.WriteFile(path, []byte("new"), 0o644)
	if !errors.Is(err, atomicfile.ErrNotRegular) {
		t.Fatalf("WriteFile(%q) = %v, want ErrNotRegular", path, err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("WriteFile(%q) = %q, want it to name the path and %q", path, err, "named pipe")
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("after WriteFile, Lstat(%q) = %v, %v; want a named pipe", path, fi, err)
	}
	assertNoTemps(t, dir)
}

// isTemp reports whether name has the shape of a temporary file of this
// package: ".<base><random digits>", renameio's naming, or
// ".<base>.tmp-<random>", the naming on Windows and for long names.
func isTemp(name string) bool {
	return strings.HasPrefix(name, ".") && (strings.Contains(name, ".tmp-") || tempDigits.MatchString(name))
}

var tempDigits = regexp.MustCompile(`^\..+[0-9]$`)

// assertNoTemps fails the test if dir holds a temporary file of ours.
func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	for _, name := range listDir(t, dir) {
		if isTemp(name) {
			t.Errorf("temporary file %q left in %s", name, dir)
		}
	}
}

func symlink(t *testing.T, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Fatal(err)
	}
}

func readlink(t *testing.T, name string) string {
	t.Helper()
	dest, err := os.Readlink(name)
	if err != nil {
		t.Fatalf("Readlink(%q) = %v; want a symlink", name, err)
	}
	return dest
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFileTakesALongName checks that a target whose name leaves no room
// for renameio's temporary name (a dot, the name and up to 19 digits, over
// 255 bytes) is still written, through a temporary name cut short. Ablation:
// staging every name with renameio (no maxRenameioBase fallback) makes it
// red with ENAMETOOLONG.
func TestWriteFileTakesALongName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, strings.Repeat("n", 250))
	writeFile(t, path, "old")
	require.NoError(t, atomicfile.WriteFile(path, []byte("new"), 0o644), "WriteFile(<250-byte name>)")
	require.Equal(t, "new", readFile(t, path), "WriteFile(<250-byte name>): contents")
	require.Equal(t, []string{filepath.Base(path)}, listDir(t, dir), "WriteFile(<250-byte name>): directory")
}
