// Command looprunner is a thin command line over filetxn's typed stores: the
// deferred-work ledger, the sprint-status board and the loop state, plus the
// lock diagnostics and a demo that races worker processes on all three.
//
//	looprunner [-state-dir DIR] [-lock-timeout DURATION] [-json] AREA COMMAND [flags] [args]
//
//	looprunner batch < OPERATIONS (JSON lines: {"op":"ledger.close","file":F,"ids":[ID],...})
//	looprunner demo [-procs N] [-n M] [-dir DIR]
//	looprunner version
//	looprunner ledger add     -file FILE -title TITLE -origin WHERE -source-spec SPEC -reason WHY [-location WHERE] [-severity SEVERITY]
//	looprunner ledger close   -file FILE -date DATE -note NOTE [-op OPID] ID...
//	looprunner ledger reopen  -file FILE -note NOTE -op OPID ID...
//	looprunner ledger decide  -file FILE -date DATE -label LABEL [-detail TEXT] [-close-note NOTE] ID
//	looprunner ledger archive -file FILE [-before DATE] [-stamp DATE] [-dry-run]
//	looprunner ledger list    -file FILE [-status STATUS]
//	looprunner board advance  -file FILE [-now TEXT] [-allow-regression] [-allow-unordered] KEY STATUS
//	looprunner board show     -file FILE
//	looprunner loop create    -root DIR [-template T] [-paused] [-schedule] [-every PERIOD] [gate flags] NAME
//	looprunner loop pause     -root DIR [-by NAME] [-reason REASON] NAME
//	looprunner loop approve   -root DIR [-by NAME] [-note NOTE] NAME
//	looprunner loop resume|check-gate|show|delete|enable-schedule|disable-schedule -root DIR NAME
//	looprunner loop list      -root DIR
//	looprunner loop tick      -root DIR [-trigger manual|schedule] [-timeout DURATION] NAME -- CMD [ARG...]
//	looprunner lock holder    PATH
//	looprunner lock sidecar   FILE
//
// Every behaviour is a call into the packages; this command only parses
// arguments and prints. It follows the conventions of go, gh and kubectl:
// help (-h, help AREA COMMAND) goes to stdout with exit 0, a usage error is
// one line on stderr with exit 2, and the global flags may also be given
// after the command. Exit codes: 0 done, 1 refused by a guard, 2 usage, 3 no
// such file, entry, row, loop or root, 4 halted, 5 paused, 6 a tick's
// harness failed, 65 a file it does not understand, 75 the lock was busy
// past -lock-timeout, 124 a tick's harness timed out, 126 a tick's harness
// could not be started, 127 a tick's harness was not found.
//
// The command line is package runner, so that another module can extend
// it: etcd/cmd/looprunner, in the etcd module, is this command on etcd.
package main

import (
	"os"

	"github.com/filetxn/filetxn/examples/looprunner/runner"
)

func main() {
	os.Exit(runner.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
