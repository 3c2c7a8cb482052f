//go:build !unix

package loopstate

import "testing"

type floor struct{}

func newFloor(b *testing.B, l *Loop) *floor { b.Skip("the raw floor needs flock(2)"); return nil }

func (f *floor) op(b *testing.B, sync bool) {}
