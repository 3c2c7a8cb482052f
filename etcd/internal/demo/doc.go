// Package demo is looprunner's demo on etcd, the command etcd-race that
// Extension adds: hosts race on a ledger and a board kept on a real etcd
// cluster while the cluster's leader crashes and a host freezes, and tick a
// loop kept there too.
//
// The demo starts a 3-member cluster (package cluster: processes of the
// running binary, which must call cluster.RunMember first in main) and a
// worker process per host, each with its own temporary and state
// directories, so that no lock file is shared and etcd's locks alone
// exclude them. The workers are the running binary too, run as
// "etcd-race -worker I ...": a main that passes Extension to runner.Main
// needs nothing more. Their histories are checked with package lin.
//
// # Guarantees
//
//   - The verdict's checks fail, and the command exits 1, on an update
//     lost, an id minted twice, a tick counted twice or not logged as its
//     runner was told, a frozen host's write that was not refused, or a
//     history that is not linearizable.
//   - Every process the demo starts is killed before it returns, and dies
//     with it on Linux (a parent-death signal) or soon after elsewhere;
//     its directory is removed unless -dir is given.
//
// # Caveats
//
//   - Unix only (it sends SIGSTOP and SIGCONT, and the cluster needs Unix).
//   - The members do not fsync: the demo crashes processes, not machines.
package demo
