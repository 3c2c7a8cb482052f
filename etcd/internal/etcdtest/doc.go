// Package etcdtest starts real etcd clusters from tests, one process per
// member, and runs a test's own client processes beside them.
//
// A test binary that uses it calls [Main] from its TestMain. [Start] then
// runs n members of a cluster as child processes of the test binary (a
// re-execution chosen by an environment variable, which Main recognises
// before any test runs), on 127.0.0.1 at free ports, with data directories
// under the test's temporary directory. [Cluster.Kill] and
// [Cluster.Restart] crash and revive a member on its data directory and
// ports; [Child] and [Register] run a function of the test binary in a
// process of its own, the client side of a fault test.
//
// # Guarantees
//
//   - Start and Restart return only when the members they started answer
//     a linearizable read, and every wait is bounded by [Timeout]: a member
//     that does not come up fails the test instead of hanging it.
//   - Every process the harness starts is killed when the test ends, and,
//     on Linux, when the test binary dies (a parent-death signal). A member
//     process also exits by itself when its parent goes away.
//   - Members print nothing on the test's output: etcd's log and the
//     process's own output go to files, whose tails are logged when the test
//     fails.
//
// # Caveats
//
//   - Unix only: on other systems Start and Child skip the test.
//   - Members are tuned to start and elect quickly (short heartbeat and
//     election timeouts, small WAL segments) and do not fsync: they survive
//     the crash of a process, which the kernel's page cache outlives, not
//     the loss of the machine's power.
//   - A member runs the test binary, so a binary built with -race runs its
//     members with the race detector too, which makes them slower.
//   - Ports are chosen free before the members bind them, so another
//     program may take one in between; Start then fails the test.
package etcdtest
