//go:build !windows

package testkit

func detected() bool { return false }
