package atomicfile

// An Option changes how [WriteFile] and [Create] work. No options means the safe
// defaults: every write is fsynced and the directory is fsynced after the rename.
type Option func(*options)

// options is the resolved configuration of one call.
type options struct {
	noSync bool // skip the file fsync and the directory fsync
}

// WithoutSync skips the fsync of the temporary file and of the directory (and,
// on Windows, asks MoveFileEx for no write-through). The replace stays atomic for
// other processes, which still see the old file or the new one, but it is no
// longer durable: after a power loss or a kernel crash the target may hold the
// old version, the new one or, on file systems that reorder metadata before data,
// an empty or partial file. Use it for files that can be rebuilt, or in tests.
func WithoutSync() Option {
	return func(o *options) { o.noSync = true }
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
