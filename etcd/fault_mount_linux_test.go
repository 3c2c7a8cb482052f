package etcd_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of size bytes on a new temporary directory and
// returns it; it is unmounted when the test ends. Without the privilege to
// mount (root, or CAP_SYS_ADMIN) the test is skipped.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "filetxn-fault-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		os.Remove(dir)
		t.Skipf("mount of a %d-byte tmpfs on %s: %v (the full-disk test needs root)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			return
		}
		os.Remove(dir)
	})
	return dir
}

// freeBytes returns the bytes free for an unprivileged user on the file
// system of dir.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
