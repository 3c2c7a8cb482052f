//go:build unix

package testkit

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func makeSpecial(t testing.TB, paths map[string]string) {
	t.Helper()
	paths["fifo"] = filepath.Join(t.TempDir(), "data")
	if err := unix.Mkfifo(paths["fifo"], 0o644); err != nil {
		t.Fatal(err)
	}
	// A socket's path must be short (sun_path holds about 100 bytes), and a
	// test's TempDir, which holds the test's name, may not be.
	sdir, err := os.MkdirTemp("", "odd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	paths["socket"] = filepath.Join(sdir, "data")
	l, err := net.Listen("unix", paths["socket"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if _, err := os.Stat("/dev/null"); err == nil {
		paths["device"] = filepath.Join(t.TempDir(), "data")
		if err := os.Symlink("/dev/null", paths["device"]); err != nil {
			t.Fatal(err)
		}
	}
}
