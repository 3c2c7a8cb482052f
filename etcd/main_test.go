package etcd_test

import (
	"testing"

	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
)

// TestMain lets the harness run members and child processes from this
// test binary. Tests that need a child process register its function from
// a package-level variable's initialiser (see incrementer).
func TestMain(m *testing.M) { etcdtest.Main(m) }

// startCluster starts a one-member cluster for the test.
func startCluster(t *testing.T) *etcdtest.Cluster { return etcdtest.Start(t, 1) }
