package lock

import "golang.org/x/sys/unix"

// describe names a Linux file system by its magic number. f_type is a
// 32-bit magic number stored in a type that differs by architecture, signed
// on some: the low 32 bits are the magic.
func describe(st *unix.Statfs_t) statfsResult { return statfsResult{magic: uint32(st.Type)} }
