// Package etcd keeps the documents of filetxn stores in an etcd cluster, so
// that processes on several hosts share them under one set of locks.
//
// New returns a Backend for one project's key prefix; pass it to the stores
// with filetxn.WithBackend. A store's document is one etcd key, its lock an
// etcd mutex (the protocol of go.etcd.io/etcd/client/v3/concurrency) held by
// the Backend's session; docs/formats/etcd.md in the repository describes
// the keys, which etcdctl can read and lock too.
//
// # Guarantees
//
//   - Exclusion across hosts and processes: a lock is held by one Backend
//     (one session, one lease) at a time. The engine queues the goroutines
//     of one process that share a Backend.
//   - Fencing: every Commit is one etcd transaction that writes only if
//     every lock it is fenced by is still held by this session and every
//     document read under them is unchanged since; otherwise it writes
//     nothing and fails with an error matching lock.ErrLockLost. A lock
//     whose lease expired, was revoked or is no longer kept alive is lost.
//   - Atomicity across documents: the puts of one Commit (a MutateAll) are
//     published together or not at all, and every reader sees all or none.
//   - Reads are linearizable: a Get sees every write that has returned.
//   - A crashed holder's locks are freed when its lease expires, one session
//     TTL (see WithSessionTTL) after its last keep-alive.
//
// # Caveats
//
//   - A Commit that fails with another error (the cluster unreachable, ctx
//     done) may or may not have been applied: the outcome is unknown.
//   - A document and the request that writes it must fit etcd's request
//     limit (--max-request-bytes); the etcd client's own send limit
//     (2 MiB unless configured) applies too. etcd also limits the operations
//     of one transaction (--max-txn-ops, 128 by default), which bounds the
//     members of one MutateAll.
//   - A Lock that fails, or whose ctx ends, removes its place in the queue
//     with a timeout of its own (five seconds), which may outlast ctx; if
//     the cluster cannot be reached for that, the session is given up, so
//     that its lease expires, and the Backend's other holds are lost.
//   - A Backend keeps the lock of a document it mutated while no other
//     session wants it (see Backend): its key stays in etcd while the
//     process is idle, until another session asks, or the Backend closes.
//   - Two projects must not use nested prefixes ("p" and "p/docs"): their
//     keys would overlap.
package etcd
