// Package torture holds the crash torture tests of the typed stores. In the
// first, worker processes run the looprunner command line to append, close
// and archive ledger entries, advance board stories and tick a loop on
// shared files while about half of them are SIGKILLed at random moments;
// the test then checks that nothing acknowledged was lost and nothing was
// left behind. In the second (on Unix), the test binary's own worker
// processes close or append a ledger entry and advance its story on a
// board in one filetxn.MutateAll, or tick a loop whose tick's commit
// (loopstate.WithCommit) is that batch, beside single-file writes of the
// same files, and are SIGKILLed at random moments or at the engine's seam
// points; the test then checks that no batch or tick is split, none
// acknowledged is lost, every tick is counted once with one log line, and
// no staged file or intent record is left. It has no API.
//
// go test ./internal/torture runs 300 kills of the first and 200 of the
// second; FILETXN_TORTURE=N runs N of each, and -v prints the figures:
//
//	FILETXN_TORTURE=10000 go test -v -run Torture ./internal/torture
//	FILETXN_TORTURE=10000 go test -v -run TortureMulti ./internal/torture
package torture
