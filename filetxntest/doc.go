// Package filetxntest tests code built on filetxn the way filetxn tests
// itself: with real processes racing on real files.
//
// It has three parts:
//
//   - Re-execution: [Run] runs a function of the test in N child processes
//     of the test binary, lined up on a barrier so that they start their
//     work together, and collects their results and output. The child
//     branch is chosen by an environment variable derived from the test's
//     name, and a child runs only that test (an anchored -test.run pattern).
//   - [CheckCodec] checks a codec against the contract of filetxn.Codec: the
//     document of a missing file, encodings that are stable and read back,
//     inputs and results that no later call changes, and refusals of bad
//     input with the codec's own error.
//   - [CheckRace] runs N processes x M transactions of a caller's step on a
//     caller's store and checks a caller's invariant at the end, which is
//     how a lost update (a lock that guards only one process, a read outside
//     the transaction) shows.
//
// Everything takes a [testing.TB] and reports through it; the package
// imports no assertion library and nothing of filetxn's API (only its
// internal re-execution helper), so any test package can use it, filetxn's
// own included.
//
// # Guarantees
//
//   - Every wait is bounded by [Timeout]: a child or a barrier that takes
//     longer fails the test instead of hanging it. Children still running
//     when the test ends are killed, and the output of every child is logged
//     when the test fails.
//   - Processes are coordinated through files in a shared directory, never by
//     sleeping: a child that reaches the barrier says so with a file, and
//     waits for the parent's. The harness's own files there are named
//     ".filetxntest-*"; everything else in it is the test's.
//
// # Caveats
//
//   - A test that uses re-execution runs its body once in the parent and once
//     in every child: code before the call to Run or CheckRace runs in all
//     of them, so keep it to setup that is the same everywhere (and use
//     the shared directory, not t.TempDir, for files the processes share).
//   - Children are started with -test.run anchored on the test's full name,
//     so a subtest's name must be the same in every run (no random or
//     time-based names).
//   - A child runs with the parent's environment. Test binaries built with
//     -race run their children with the race detector too.
package filetxntest
