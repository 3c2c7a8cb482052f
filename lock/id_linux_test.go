package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIdentityWithAndWithoutStatx checks that a lock file has one identity
// whether it is looked up with statx(2) or, where statx is missing, with
// stat(2), by path and by descriptor, and that locking works on the fallback
// (re-entry is judged by entries keyed by that identity). Ablation: building
// the fallback's device number another way than the kernel's st_dev (say,
// major<<32|minor) makes the identities differ where the file system's device
// has a major number; TestDeviceNumberEncoding covers the others.
func TestIdentityWithAndWithoutStatx(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer noStatx.Store(noStatx.Load())

	var ids []fileID
	for _, without := range []bool{false, true} {
		noStatx.Store(without)
		byPath, err1 := idOfPath(path)
		byFile, err2 := idOfFile(f)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, byPath, byFile)
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("identities of one file (statx by path, by descriptor, stat by path, by descriptor) = %v, want all equal", ids)
		}
	}

	noStatx.Store(true)
	h, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatalf("Acquire without statx = %v", err)
	}
	defer h.Release()
	if _, err := Acquire(context.Background(), path); !errors.Is(err, ErrReentrant) {
		t.Errorf("second Acquire without statx = %v, want ErrReentrant", err)
	}
}

// TestDeviceNumberEncoding checks that statx's major and minor, put together
// with unix.Mkdev as statxID does, give stat's encoding of a device number,
// on a device with both a major and a minor number (/dev/null is 1:3).
// Ablation: any other packing (say, major<<32|minor) makes it red.
func TestDeviceNumberEncoding(t *testing.T) {
	var stx unix.Statx_t
	var st unix.Stat_t
	if err := errors.Join(unix.Statx(unix.AT_FDCWD, "/dev/null", 0, unix.STATX_TYPE, &stx), unix.Stat("/dev/null", &st)); err != nil {
		t.Skip("no /dev/null:", err)
	}
	if got := unix.Mkdev(stx.Rdev_major, stx.Rdev_minor); got != uint64(st.Rdev) || stx.Rdev_major == 0 {
		t.Errorf("Mkdev(%d, %d) = %#x, stat says %#x", stx.Rdev_major, stx.Rdev_minor, got, uint64(st.Rdev))
	}
}
