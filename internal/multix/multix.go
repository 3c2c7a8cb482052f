// Package multix lets this module's typed stores add to a multi-file
// commit (filetxn.MutateAll) what the engine's public API has no call for:
// a line appended to a log that one member's lock guards, published with
// the commit's files or not at all. Package filetxn sets its functions when
// it is initialised; loopstate calls them to log a tick in the commit that
// counts it.
package multix

import "context"

// Append adds data to the end of the file at path as part of the commit of
// m (a *filetxn.Multi whose fn is running), under the lock of member (the
// *filetxn.Store[D] the log belongs to). data is one or more whole lines,
// valid UTF-8, each ending in a newline. On a backend, name is the document
// created with data instead (path is then unused). It is set by package
// filetxn.
var Append func(m, member any, path, name string, data []byte) error

// MutateAllHeld is filetxn.MutateAll on a backend for a caller that holds
// the lock of members[0] already (held, the filetxn.Held of a Tx of that
// store) and keeps it: the other members' locks are taken without waiting
// while it is held, and tried again after a pause while one is busy, until
// ctx ends; fn gets the *filetxn.Multi. A tick of a loop on a backend
// records itself with other stores so, since letting its lock go would
// tell another session that its runner is gone. It is set by package
// filetxn.
var MutateAllHeld func(ctx context.Context, members []any, held any, fn func(m any) error) error

// Check reports what filetxn.MutateAll would refuse in members before it
// takes a lock (a nil member, two of one file, members of two backends),
// so that a tick refuses its commit before its harness runs. It is set by
// package filetxn.
var Check func(members []any) error
