//go:build darwin || dragonfly || freebsd

package lock

import "golang.org/x/sys/unix"

func fsTypeName(st *unix.Statfs_t) []byte { return st.Fstypename[:] }
