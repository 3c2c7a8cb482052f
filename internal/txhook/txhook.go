// Package txhook lets the module's tests stop a transaction of the filetxn
// engine at a chosen point, from any package: a test of a typed store
// (ledger, board) puts hooks in the context it passes to the store, and the
// engine calls them. Outside tests nothing sets them, and a context without
// hooks costs the engine one Value lookup per transaction.
package txhook

import "context"

// A Point is a step of a transaction.
type Point int

const (
	TempWritten Point = iota // the temp file is written, not yet fsynced, renamed or the lock re-checked
	Check                    // a write, append or remove is about to re-check the lock and publish
	Replaced                 // the rename is done, the lock still held
	Queued                   // a call joined its store's group commit queue (called under the group's mutex: it must not block)
)

// Hooks maps points to the functions called there. The zero value does
// nothing.
type Hooks map[Point]func()

// Call calls the function at p, if any.
func (h Hooks) Call(p Point) {
	if f := h[p]; f != nil {
		f()
	}
}

type key struct{}

// With returns a context that carries h to every transaction run with it.
func With(ctx context.Context, h Hooks) context.Context {
	return context.WithValue(ctx, key{}, h)
}

// From returns the hooks carried by ctx, or nil.
func From(ctx context.Context) Hooks {
	h, _ := ctx.Value(key{}).(Hooks)
	return h
}
