// Package atomicstage is the implementation of package atomicfile: a
// [PendingFile] stages a replacement of a target beside it and publishes it
// by rename, and [Append] appends to a log. Package atomicfile documents the
// guarantees and caveats of both, and its WriteFile is [Create],
// [PendingFile.Write] and [PendingFile.CloseAtomicallyReplace] in one call.
//
// The engine (the root package's Tx.write) stages its writes here directly,
// rather than through atomicfile.WriteFile, for the two steps it takes
// between them: it checks its lock after the slow fsync and right before the
// rename ([Options.Check]), and makes the directory fsync itself, after it
// has released the lock ([Options.Published]). A user who wants to stream a
// large file into place has renameio's PendingFile, which is what stages the
// temporary file here on Unix.
package atomicstage
