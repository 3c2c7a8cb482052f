// Package loopstate keeps the state of long-running loops (agent or CI
// loops ticked by a scheduler, paused by people, halted by gates and approved
// to continue) in files that a runner and operator commands read and write at
// the same time, without lost updates, torn files or deadlocks.
//
// A [Root] is a directory of loops; each loop is <root>/loops/<name>/ with
// its state .state.loop (one JSON document, the format of
// docs/formats/loopstate.md in the repository, replaced atomically), its lock file
// .state.lock and its append-only tick log ticks.jsonl. [Doc] is the state,
// with its transitions ([Doc.Pause], [Doc.Resume], [Doc.Approve],
// [Doc.CheckGates], [Doc.SetGates], [Doc.EnableSchedule],
// [Doc.DisableSchedule]) and gates ([Doc.TrippedGates]); [Codec] reads and
// writes it for the filetxn engine. A [Loop] runs the operator commands
// under the loop's lock, and [Loop.Tick] runs a whole tick, harness
// included, under it; package loopstate/harness runs a harness as a child
// process.
//
// # Guarantees
//
//   - No lost update: every change (operator command or tick) takes the
//     loop's lock, then reads the state, then checks its guard on what it
//     read, then writes. A pause or approve issued during a tick waits for the
//     tick to end and then applies on top of the tick's result; of five
//     concurrent approves of a halted loop exactly one succeeds.
//   - No torn state: the state file is only ever replaced by rename (package
//     atomicfile through the engine), so a reader without the lock
//     ([Root.List], [Loop.View]) and a crash see a whole version.
//   - Refused, never rewritten: a state file with an unknown schema major, a
//     malformed document or a broken invariant gives a *StateError naming
//     the path and the key or invariant, and is not written; a Doc that
//     breaks an invariant is not written either.
//   - Exact round trip: a state that is read and not changed is written back
//     (if at all) byte for byte, whatever its layout; unknown top-level keys
//     survive changes.
//   - Atomic create: [Root.Create] fills the loop's directory under a hidden
//     name and renames it into place only if the name is free, so two
//     concurrent creates of one name give exactly one loop, never a
//     half-written one.
//   - Crash recovery: a tick marks itself in current_tick (with its
//     process's pid and start token) before its harness runs; if the
//     runner's process dies, the kernel releases the lock and the next tick
//     counts the tick as failed and logs it as abandoned. A tick is taken
//     for abandoned only when its runner is gone: no live process has the
//     pid, or the one that has it started at another time (where the
//     system tells: Linux, macOS, Windows). A live runner's tick is left
//     alone (the next manual tick is refused as busy).
//   - One log line per counted tick: a tick appends its line before it
//     writes the state that counts it, and the next tick after a runner
//     died between the two counts that tick from its line, without a
//     second one (short of a power loss: see Caveats).
//   - A lost lock file publishes nothing: a lock file removed or replaced
//     while a tick or command holds it lets another process lock the file
//     now at the path; so every write re-checks, just before it publishes,
//     that the file at the path is still the one locked, and otherwise
//     publishes nothing and fails with an error matching lock.ErrLockLost
//     that names the lock file. A loop whose .state.lock was removed (its
//     state still there) gets it back from the next operation.
//   - No overflow: an operation that would take a counter or a sum of
//     spent past what the format holds fails with ErrOverflow and writes
//     nothing; no operation writes a state this package's decoder refuses.
//   - Durable results: the state that records a tick's result, and every
//     operator command's state, is fsynced (file and directory) before the
//     lock is released, unless the Root was opened WithoutSync.
//   - Bounded waits: operator commands wait for the lock only as long as
//     their context allows and then return a *lock.BusyError naming the
//     holder; a manual tick likewise, with [WithLockTimeout] bounding
//     its wait apart from its harness; scheduled ticks never wait
//     (skipped/busy); a harness has a wall timeout after which its process
//     group is killed.
//   - No bypass: the lock is never skipped because of an environment
//     variable. A harness that needs the loop's lock (to run check-gate or
//     pause on its own loop) gets it by hand-over of the runner's held lock
//     (lock.Handle.HandOver), which it verifies; a variable alone grants
//     nothing.
//   - A deleted loop stays deleted: Delete renames the loop's directory
//     away under its lock, a caller that was waiting for that lock gets
//     ErrDeleted, and one that comes later gets ErrNoLoop without the lock
//     file or its directory being created again (lock.WithoutCreate), so
//     the name is free for Create.
//   - Gates after a tick are evaluated in-process, with the same code as
//     check-gate, on the state re-read after the harness.
//
// # Caveats
//
//   - The lock is advisory: a program that writes the state without taking
//     .state.lock is not stopped.
//   - Local file systems only: flock(2) is unreliable on NFS.
//   - Operator commands can wait up to a tick's whole timeout, since the
//     runner holds the lock across the harness: give them a context with a
//     deadline.
//   - The methods of a Loop are not re-entrant: called from inside a Mutate
//     callback on the same loop they return an error matching
//     lock.ErrReentrant. An in-process Harness runs while its tick holds the
//     lock, so it must not call its loop's methods at all (from another
//     goroutine they would wait for the tick, which waits for the harness):
//     it reports through its Result. A harness.Command is another process
//     and may, since the lock is handed over to it.
//   - A runner killed mid-tick releases the lock only once every process
//     that inherited the lock's descriptor has exited. On Linux the harness
//     gets SIGKILL when its runner dies (processes it started do not);
//     elsewhere it keeps the lock until it exits on its own. Likewise a
//     timeout kills the harness's process group, not a descendant that left
//     it (setsid).
//   - Two writes of a tick are not made durable, which saves a directory
//     fsync and a file fsync per tick (bench_test.go measures a tick against
//     one durable state write). The running marker (current_tick, written before
//     the harness) replaces the state file with its bytes fsynced but without
//     the directory fsync: a power loss or kernel crash may undo it (the file
//     then holds the state from before the tick, never a torn or empty one),
//     and that tick is then not counted as abandoned (its cost was never
//     recorded in any case); the death of the runner's process, which is what
//     the marker guards against, cannot undo it. The tick log is appended
//     without fsync, just before the durable state write: after a power loss
//     the log may lack its last lines while the state has them counted. A
//     write that carries a recovered tick's counts stays durable.
//   - Telling a live runner from a dead one is per host (a pid means
//     nothing on another machine, and flock does not exclude across hosts
//     either), and where the system gives no start time (the BSDs other
//     than macOS, and states written before current_tick.pid_start existed)
//     any live process with the runner's pid counts as the runner. A runner
//     whose lock file was lost and whose process lives on (a long-running
//     program calling Tick) leaves its current_tick set: ticks from other
//     processes are refused as busy until it exits, or until it ticks the
//     loop again itself, which settles the tick as abandoned.
//   - States with current_tick.pid_start are refused by versions of this
//     package from before the key existed while a tick is marked (their
//     decoder knows no such key).
//   - The skipped/busy line of a scheduled tick is appended without the lock
//     (it cannot wait for it), in a single O_APPEND write.
//   - Windows: the lock is not handed over to a harness.Command (the child must not
//     take the loop's lock), a timeout terminates only the child, and Delete
//     fails while the loop's lock file is open.
package loopstate
