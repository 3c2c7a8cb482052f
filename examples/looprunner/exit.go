package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/lock"
)

// Exit codes: those of the loop format (docs/formats/loopstate.md),
// extended with 65 for a file the command does not understand and with the
// codes of a tick whose harness did not succeed (those of timeout(1) and the
// shell where they have one).
const (
	exitOK        = 0  // done
	exitRefused   = 1  // refused by a guard, and any other failure
	exitUsage     = 2  // usage error
	exitNotFound  = 3  // no such file, entry, row or loop
	exitHalted    = 4  // the loop is (or was just) halted
	exitPaused    = 5  // check-gate finds the loop paused
	exitDataError = 65 // EX_DATAERR: a file it does not understand
	exitBusy      = 75 // EX_TEMPFAIL: the lock was busy past -lock-timeout

	exitHarnessFailed   = 6   // a tick's harness ran and failed
	exitHarnessTimeout  = 124 // a tick's harness ran past its timeout and was killed, as timeout(1)
	exitHarnessNoStart  = 126 // a tick's harness was found but could not be started, as the shell
	exitHarnessNotFound = 127 // a tick's harness was not found, as the shell
)

// codeError is a command that ran but did not succeed, with the exit code
// that says how, such as a tick whose harness failed.
type codeError struct {
	code int
	msg  string
}

func (e *codeError) Error() string { return e.msg }

// usageError is a command line that cannot be run (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errHelp is -h: the usage was printed, and the exit code is 0.
var errHelp = errors.New("help requested")

// notFoundError is a file, entry, row or loop that does not exist (exit 3).
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func notFoundf(format string, args ...any) error {
	return &notFoundError{fmt.Sprintf(format, args...)}
}

// refusedError is an operation refused by a guard (exit 1), such as closing
// a malformed ledger entry.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

func refusedf(format string, args ...any) error {
	return &refusedError{fmt.Sprintf(format, args...)}
}

// dataError is a file the command does not understand (exit 65) that the
// packages report without a typed error of their own, such as a loop state
// listed with an error.
type dataError struct{ err error }

func (e *dataError) Error() string { return e.err.Error() }
func (e *dataError) Unwrap() error { return e.err }

// exitCode maps an error of a command to its exit code. The order matters:
// a busy lock or an unreadable file may also wrap a "not exist" error.
func exitCode(err error) int {
	var (
		usage    *usageError
		notFound *notFoundError
		refused  *refusedError
		data     *dataError
		lbusy    *lock.BusyError
		format   *filetxn.FormatError
	)
	var coded *codeError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &coded):
		return coded.code
	case errors.As(err, &usage),
		errors.Is(err, filetxn.ErrInvalidArgument):
		return exitUsage
	case errors.As(err, &lbusy), errors.Is(err, lock.ErrWouldBlock),
		errors.Is(err, lock.ErrLockLost): // nothing was written: running it again is safe
		return exitBusy
	case errors.As(err, &data),
		errors.As(err, &format),
		errors.Is(err, atomicfile.ErrNotRegular):
		return exitDataError
	case errors.As(err, &notFound), errors.Is(err, fs.ErrNotExist),
		errors.Is(err, filetxn.ErrNotFound):
		return exitNotFound
	case errors.As(err, &refused):
		return exitRefused
	}
	return exitRefused // a refused loop transition, and any other failure
}

// fail prints err as one line on stderr, starting with the command's name,
// and (with -json) as one JSON document on stdout, and returns the exit code.
func (c *cli) fail(err error) int {
	code := exitCode(err)
	if err == nil || errors.Is(err, errHelp) {
		return code
	}
	msg := message(err)
	var usage *usageError
	if errors.As(err, &usage) && c.cmd.run != nil && !strings.Contains(msg, " -h'") && !strings.Contains(msg, "did you mean") {
		msg += "; see 'looprunner " + c.name + " -h'"
	}
	fmt.Fprintf(c.stderr, "%s: %s\n", c.name, msg)
	if (c.json || c.jsonAsked && usage != nil) && !c.printed {
		c.printJSON(struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}{msg, code})
	}
	return code
}

// message is the text of err on one line. A busy lock names the lock file,
// its holder and how long the command waited.
func message(err error) string {
	var lbusy *lock.BusyError
	if errors.As(err, &lbusy) {
		s := fmt.Sprintf("lock %s busy, held by %s", lbusy.Path, lbusy.Holder.String())
		if lbusy.Waited > 0 {
			s += fmt.Sprintf("; gave up after %s", roundDuration(lbusy.Waited))
		}
		if filepath.Base(lbusy.Path) == loopLockFile {
			s = filepath.Base(filepath.Dir(lbusy.Path)) + ": " + s // a loop's own lock
		}
		return s
	}
	var lflag *ledgerFlagError
	switch {
	case errors.As(err, &lflag):
		return lflag.Error() // verbatim: the value is quoted as given
	case errors.Is(err, board.ErrUnorderedStatus):
		// The board names the row, its status and the target; the command line
		// names the order and the flag.
		return strings.Join(strings.Fields(err.Error()), " ") + " (" + statusOrder() + "); give -allow-unordered to overwrite it"
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
