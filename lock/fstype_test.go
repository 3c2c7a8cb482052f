//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || windows

package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// injectStatFS makes every lock file opened until t ends report r as its
// file system, and returns the number of statfs calls made so far. The
// tests that call it do not run in parallel, so no lookup races the swap.
func injectStatFS(t *testing.T, r statfsResult) *atomic.Int64 {
	var calls atomic.Int64
	statFS = func(*os.File) statfsResult { calls.Add(1); return r }
	t.Cleanup(func() { statFS = statFile })
	return &calls
}

// TestAcquireRefusesNetworkFileSystems: on a file system where flock may
// not exclude other hosts (NFS, FUSE, SMB, 9p, by Linux magic number or by
// BSD/macOS name), Acquire and TryAcquire fail with a *fs.PathError that
// names the lock file and the file system and matches ErrNotSupported; with
// WithAnyFileSystem they lock; and a descriptor that an allowed acquisition
// left in the table is still refused to a caller without the option.
//
// Ablations that turn it red: fsRefusal returning nil (every case is let
// in); dropping the fsErr check from acquireCached, or from found (the
// refusal after an allowed acquisition: the cached descriptor is granted).
func TestAcquireRefusesNetworkFileSystems(t *testing.T) {
	for _, tc := range []struct {
		r    statfsResult
		want string // in the error
	}{
		{statfsResult{magic: 0x6969}, "file system nfs (0x6969)"},
		{statfsResult{magic: 0x65735546}, "file system fuse (0x65735546)"},
		{statfsResult{magic: 0xFF534D42}, "file system cifs (0xff534d42)"},
		{statfsResult{magic: 0xFE534D42}, "file system smb2 (0xfe534d42)"},
		{statfsResult{magic: 0x01021997}, "file system 9p (0x1021997)"},
		{statfsResult{name: "nfs"}, "file system nfs:"},
		{statfsResult{name: "smbfs"}, "file system smbfs:"},
		{statfsResult{name: "macfuse"}, "file system macfuse:"},
		{statfsResult{name: "fusefs.sshfs"}, "file system fusefs.sshfs:"},
	} {
		t.Run(strings.TrimPrefix(tc.want, "file system "), func(t *testing.T) {
			injectStatFS(t, tc.r)
			path := filepath.Join(t.TempDir(), "x.lock")
			refused := func(when string) {
				t.Helper()
				for name, try := range map[string]func() (*Handle, error){
					"Acquire":    func() (*Handle, error) { return Acquire(context.Background(), path) },
					"TryAcquire": func() (*Handle, error) { return TryAcquire(path) },
				} {
					h, err := try()
					if h != nil {
						h.Release()
					}
					var pe *fs.PathError
					require.True(t, errors.Is(err, ErrNotSupported) && errors.As(err, &pe) && pe.Path == path &&
						strings.Contains(err.Error(), tc.want),
						"%s %s(%q) = %v, want a *fs.PathError naming the path and %q, matching ErrNotSupported", when, name, path, err, tc.want)
				}
			}
			refused("first")
			h, err := Acquire(context.Background(), path, WithAnyFileSystem())
			require.NoError(t, err, "Acquire(%q, WithAnyFileSystem()) = %v, want nil", path, err)
			require.NoError(t, h.Release(), "Release(%q)", path)
			refused("after an allowed acquisition,")
			h, err = TryAcquire(path, WithAnyFileSystem())
			require.NoError(t, err, "TryAcquire(%q, WithAnyFileSystem()) = %v, want nil", path, err)
			require.NoError(t, h.Release(), "Release(%q)", path)
		})
	}
}

// TestAcquireAllowsLocalAndUnknownFileSystems: file systems on which flock
// excludes every process that can open the file (ext4, tmpfs, xfs, btrfs,
// zfs, overlayfs; APFS, HFS, UFS by name) are locked without an option, and
// so is a file system this package does not know.
//
// Ablation that turns it red: remoteName refusing every non-empty name (as
// a refuse-the-unknown policy would), or remoteMagic listing ext4.
func TestAcquireAllowsLocalAndUnknownFileSystems(t *testing.T) {
	for _, r := range []statfsResult{
		{magic: 0xEF53}, {magic: 0x01021994}, {magic: 0x58465342}, {magic: 0x9123683E},
		{magic: 0x2FC12FC1}, {magic: 0x794C7630}, {magic: 0x12345678}, {},
		{name: "apfs"}, {name: "hfs"}, {name: "ufs"}, {name: "zfs"}, {name: "newfs"},
	} {
		t.Run(fmt.Sprintf("%s%#x", r.name, r.magic), func(t *testing.T) {
			injectStatFS(t, r)
			path := filepath.Join(t.TempDir(), "x.lock")
			h, err := Acquire(context.Background(), path)
			require.NoError(t, err, "Acquire(%q) on %+v = %v, want nil", path, r, err)
			require.NoError(t, h.Release(), "Release(%q)", path)
		})
	}
}

// TestFileSystemIsCheckedOncePerDescriptor: the file system is looked at
// when the lock file is opened, not on every acquisition, so re-acquiring a
// cached lock costs no statfs.
//
// Ablation that turns it red: calling fsRefusal in acquire on every call.
func TestFileSystemIsCheckedOncePerDescriptor(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows a lock file is closed when its last handle is released, so each acquisition opens (and looks at) it again")
	}
	calls := injectStatFS(t, statfsResult{magic: 0xEF53})
	path := filepath.Join(t.TempDir(), "x.lock")
	const n = 20
	for range n {
		h, err := Acquire(context.Background(), path)
		require.NoError(t, err, "Acquire(%q)", path)
		require.NoError(t, h.Release(), "Release(%q)", path)
	}
	require.Equal(t, int64(1), calls.Load(), "statfs calls for %d acquisitions of one lock file = %d, want 1", n, calls.Load())
}
