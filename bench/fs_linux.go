package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// fileSystem names the file system dir is on: statfs(2)'s type, and the
// mount (type, mount point, device) from /proc/self/mounts.
func fileSystem(dir string) string {
	var st unix.Statfs_t
	magic := "statfs failed"
	if err := unix.Statfs(dir, &st); err == nil {
		magic = fmt.Sprintf("statfs type %#x", st.Type)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return magic
	}
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return magic
	}
	defer f.Close()
	best, bestLen := "", -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		mnt := fields[1]
		if (abs == mnt || strings.HasPrefix(abs, strings.TrimSuffix(mnt, "/")+"/")) && len(mnt) > bestLen {
			best, bestLen = fmt.Sprintf("%s on %s (%s)", fields[2], mnt, fields[0]), len(mnt)
		}
	}
	if best == "" {
		return magic
	}
	return best + ", " + magic
}

// syncAll commits every file system's pending writes (sync(2)), so that
// work left by one section is not paid by the next.
func syncAll() { unix.Sync() }

// datasync is fdatasync(2): f's data, and of its metadata only what reading
// it back needs.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
