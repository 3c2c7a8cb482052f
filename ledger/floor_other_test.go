//go:build !unix

package ledger

import "testing"

func benchFloor(b *testing.B, seed []byte) { b.Skip("the raw floor is measured on Unix") }
