//go:build !unix

package testkit

import "testing"

// makeSpecial makes nothing: only directories are made on this system.
func makeSpecial(t testing.TB, paths map[string]string) {}
