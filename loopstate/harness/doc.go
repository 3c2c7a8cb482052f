// Package harness runs the work of a loop's tick as a child process: a
// [Command] is a loopstate.Harness that starts a program with the loop's
// lock handed over, bounds it by the tick's wall timeout, and reads the
// tick's cost from its last line of output.
//
// Package loopstate keeps the state and its transitions and starts no
// process; this package is where the process handling lives: process
// groups, the parent-death signal, SIGTERM then SIGKILL.
//
// # Guarantees
//
//   - The child gets the loop's lock by hand-over (lock.Handle.HandOver),
//     never by an environment variable: a child that asks for the loop's
//     lock (check-gate, pause on its own loop) borrows the runner's at once.
//   - At the tick's timeout the child's whole process group gets SIGTERM,
//     then SIGKILL after [Command].KillGrace; Run returns once the child is
//     reaped.
//   - On Linux what the child leaves running in its group when it exits is
//     killed, and the child gets SIGKILL when the runner dies
//     (PR_SET_PDEATHSIG), so that no orphan keeps the loop's lock held.
//   - A malformed cost line is reported in the tick's note, never taken for
//     a cost.
//
// # Caveats
//
//   - A descendant that leaves the child's process group (setsid) escapes
//     the timeout's signals and keeps the lock's descriptor while it lives.
//   - Outside Linux a child outlives a runner that is killed, and keeps the
//     loop's lock until it exits.
//   - Windows: the lock is not handed over (the child must not take the
//     loop's lock), and a timeout terminates only the child, not what it
//     started.
package harness
