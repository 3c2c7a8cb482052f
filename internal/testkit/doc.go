// Package testkit is the support of the module's own tests: child
// processes of the test binary, bounded waits, files that are not regular,
// the shared corpus of real files, and Wine detection. Nothing outside tests
// (and package filetxntest, itself for tests) imports it.
//
// # Child processes (proctest.go)
//
// This part re-executes the test binary as child processes that run
// the calling test again, for the module's own cross-process tests.
//
// A test is its own child: the same function runs in the parent and, in
// child mode, in each child, and branches on [Child]:
//
//	func TestKillInsideTheTransactionLeavesTheOldFile(t *testing.T) {
//		dir := t.TempDir() // the parent's; a child uses c.Dir
//		if c := testkit.Child(t); c != nil {
//			c.Barrier()
//			... begin a transaction on a file in c.Dir, c.Mark("inside"), block ...
//			return
//		}
//		g := testkit.Start(t, 1, dir)
//		g.Release()
//		g.WaitMark("inside")
//		g.Kill(0)
//		... the file in dir is the old one, and its lock is free ...
//	}
//
// [Start] and [StartWith] start the children; a [Group] controls them one by
// one: it lets them go from the barrier, waits for a mark a child sets, kills
// one, reads its output. filetxntest.Run and filetxntest.CheckRace, the
// harness users import, are built on it and offer only a run of every child
// to its end.
//
// # Guarantees
//
//   - A child runs only the test that started it: child mode is selected by
//     an environment variable derived from the test's full name, and the
//     child's -test.run pattern anchors every element of that name.
//   - Every wait is bounded by [Timeout], and a wait of the parent's for a
//     child's file also ends when every child has exited; either way the
//     test fails with every child's output logged instead of hanging.
//   - Children still running when the test ends are killed, and the
//     goroutine that waits for each ends with it: nothing a Group starts
//     outlives the test.
//   - Processes coordinate through files in the shared directory (the
//     barrier's, the marks), polled at a short growing interval: no sleep
//     stands for an ordering.
//
// # Caveats
//
//   - The test body before the call to Child runs in the parent and in every
//     child, so keep it to setup that is the same everywhere; files the
//     processes share go in the shared directory (a child's t.TempDir is its
//     own).
//   - The harness's files in the shared directory are named ".filetxntest-*",
//     its variables FILETXNTEST_*, and its failures say "filetxntest:": users
//     of filetxntest see them, since filetxntest.Run runs on this package.
//   - A child runs with the parent's environment, Options.Env added; a
//     binary built with -race runs its children with the race detector too
//     (without its exit delay, unless GORACE is set).
//
// # Waits (testwait.go)
//
// This part waits, in the module's tests, for a value that another
// goroutine sends, under one generous bound: long enough that a loaded
// machine never trips it, short enough that a test which would block
// forever fails with the name of what it waited for.
//
// # Odd files (oddfile.go)
//
// This part makes files that are not regular files (a named pipe, a
// directory, a unix socket, a device) for the module's tests of code that
// must refuse them quickly instead of hanging or rewriting them.
//
// # The corpus (corpus.go)
//
// This part finds the shared corpus of real files from public projects
// (ledgers, boards) that the parsers' tests must round-trip. The corpus is
// not copied into this repository: it is looked up beside the checkout
// (../../shared/corpus from a package directory), or wherever FILETXN_CORPUS
// points.
//
// # Wine (wine.go)
//
// This part tells a test whether it runs under Wine, so that it can skip
// what Wine cannot do there and only there: on a real Windows every test runs.
//
// The CI stage .ci/wine runs the whole test suite for GOOS=windows under
// Debian's Wine 8. Wine is not Windows; where it lacks a call the test needs,
// the test names the limitation with Skip and runs everywhere else.
package testkit
