package testkit

import (
	"context"
	"time"
)

// DoneContexts returns contexts that are already done, one per way of
// ending: "canceled" and "expired" (a deadline in the past).
func DoneContexts() map[string]context.Context {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	cancel2()
	return map[string]context.Context{"canceled": canceled, "expired": expired}
}
