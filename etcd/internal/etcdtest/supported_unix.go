//go:build unix

package etcdtest

const supported = true
