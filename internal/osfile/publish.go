package osfile

// PublishPending publishes an *atomicfile.PendingFile pf in the engine's
// order: it fsyncs the temporary file (unless the PendingFile was made
// WithoutSync), calls check, and, only if check returns nil, renames the
// temporary file over the target. It returns the target (the path renamed
// over: the caller's path with the symbolic links of its last element
// followed) and the directory fsync that makes the rename durable, for the
// caller to run when it chooses (nil when there is none to run), and on any
// error (check's is returned as it is) it has removed the temporary file and
// left the target untouched.
//
// Package atomicfile sets it when it is initialized, as grpc-go's packages
// fill the function variables of their internal package: the engine needs
// the step between the fsync and the rename, which atomicfile's exported
// PendingFile.CloseAtomicallyReplace joins, and no user of atomicfile needs
// it enough to make it a method. pf of any other type panics.
var PublishPending func(pf any, check func() error) (target string, syncDir func() error, err error)
