// Package goroutine is the identity of goroutines for package lock, which
// judges re-entry by goroutine: the id of the calling goroutine, and loans,
// by which a goroutine that does work its lock holder waits for (the fn of
// a follower in the engine's group commit) counts as that holder as well.
package goroutine
