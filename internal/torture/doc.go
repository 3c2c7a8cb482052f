// Package torture holds the crash torture test of the typed stores, run
// through the looprunner command line: worker processes append, close and
// archive ledger entries, advance board stories and tick a loop on shared
// files while about half of them are SIGKILLed at random moments, and the
// test then checks that nothing acknowledged was lost and nothing was left
// behind. It has no API.
//
// go test ./internal/torture runs 300 kills; FILETXN_TORTURE=N runs N, and
// -v prints the figures:
//
//	FILETXN_TORTURE=10000 go test -v -run Torture ./internal/torture
package torture
