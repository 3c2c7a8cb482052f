//go:build unix && !linux

package etcd_test

import "testing"

// mountTmpfs skips the test: mounting a tmpfs is Linux's.
func mountTmpfs(t *testing.T, size int) string {
	t.Skipf("a %d-byte tmpfs for the full-disk test needs Linux", size)
	return ""
}

func freeBytes(t *testing.T, dir string) int64 { return 0 }
