// Package multix lets this module's typed stores add to a multi-file
// commit (filetxn.MutateAll) what the engine's public API has no call for:
// a line appended to a log that one member's lock guards, published with
// the commit's files or not at all. Package filetxn sets its functions when
// it is initialised; loopstate calls them to log a tick in the commit that
// counts it.
package multix

// Append adds data to the end of the file at path as part of the commit of
// m (a *filetxn.Multi whose fn is running), under the lock of member (the
// *filetxn.Store[D] the log belongs to). data is one or more whole lines,
// valid UTF-8, each ending in a newline. On a backend, name is the document
// created with data instead (path is then unused). It is set by package
// filetxn.
var Append func(m, member any, path, name string, data []byte) error
