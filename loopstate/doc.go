// Package loopstate keeps the state of long-running loops (agent or CI loops
// ticked by a scheduler, paused by people, halted by gates, approved to go
// on) in files that a runner and operator commands change at the same time.
//
// A [Root] is a directory of loops, <root>/loops/<name>/, each with its
// state (one JSON document), its lock file and its tick log, or their
// documents on a backend; docs/formats/loopstate.md specifies both. [Doc] is
// the state; a [Loop] changes it under the loop's lock (Pause, Resume,
// Approve, CheckGate, SetSchedule, or any change through Mutate), and
// [Loop.Tick] runs a whole tick, harness included, under it:
//
//	root, err := loopstate.NewRoot(dir)
//	...
//	l, err := root.Create(ctx, "nightly", func(d *loopstate.Doc) error {
//		d.Gates = loopstate.Gates{MaxTicks: new(int64(20)), BudgetUSD: new(5.0)}
//		return nil
//	})
//	...
//	rec, err := l.Tick(ctx, loopstate.TriggerManual, (&harness.Command{Path: "./triage"}).Run)
//	// err == nil: rec says what happened, rec.StatusAfter == loopstate.Halted if a gate halted it
//
// # Guarantees
//
//   - No lost update: every change takes the loop's lock, then reads, then
//     checks its guard, then writes; a pause during a tick applies after it.
//   - No torn state: the state is replaced by rename, so a reader without the
//     lock ([Loop.View]) and a crash see a whole version.
//   - No wait for a no-op: an operation that changes nothing (a check-gate
//     that trips no gate, a schedule set as it is) never waits for the lock
//     and succeeds where the lock cannot be taken: it then decides on a
//     lock-free snapshot.
//   - Refused, never rewritten: a state file that is not the format gives a
//     *filetxn.FormatError naming the key, inside an *fs.PathError naming
//     the file; an unchanged state is written back byte for byte, and
//     unknown top-level keys survive. A change the format cannot hold (a
//     counter past 2^63-1) is refused the same way and writes nothing.
//   - Crash recovery: a tick whose runner died is counted once, as its log
//     line says or as abandoned, by the next tick; a live runner's is left
//     alone. A lock file removed or replaced while held publishes nothing;
//     while the tick that held it runs, every other change of the loop is
//     refused, and the tick is recorded once its runner holds the lock
//     again.
//   - Bounded waits: commands wait only as long as their context allows and
//     then return the *lock.BusyError naming the holder; scheduled ticks
//     never wait. A tick's harness gets the lock by hand-over, never by an
//     environment variable. A halt is a tick's normal outcome, not an error.
//
// # Caveats
//
//   - The lock is advisory and per host; local file systems only (flock is
//     unreliable on NFS): across hosts, keep the loops on a filetxn.Backend
//     (NewRoot). Operator commands can wait up to a tick's timeout.
//   - A Loop's methods are not re-entrant: from inside its Mutate one that
//     would change the state returns lock.ErrReentrant, and an in-process
//     harness must not call them.
//   - A tick's running marker and its log line are not fsynced: after a power
//     loss the tick may not count as abandoned, and the log may lack its last
//     lines while the state counts them.
//   - Where the system gives no process start time (BSDs other than macOS)
//     any live process with the runner's pid counts as the runner.
package loopstate
