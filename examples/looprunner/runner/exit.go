package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
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
	if err != nil && !errors.Is(err, errHelp) {
		err = c.explainExt(err)
	}
	code := exitCode(err)
	if err == nil || errors.Is(err, errHelp) {
		return code
	}
	msg := c.message(err)
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

// message renders err for a person, on one line: the command line's own
// errors as they are, and the library's in the command line's words (see
// explain). A busy lock names the lock file, its holder and how long the
// command waited.
func (c *cli) message(err error) string {
	var be *batchError
	if errors.As(err, &be) {
		return be.message() // a batch's line, rendered as its command would
	}
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
	var (
		lflag    *ledgerFlagError
		usage    *usageError
		notFound *notFoundError
		refused  *refusedError
		coded    *codeError
	)
	switch {
	case errors.As(err, &lflag):
		return lflag.Error() // verbatim: the value is quoted as given
	case errors.As(err, &usage), errors.As(err, &notFound), errors.As(err, &refused), errors.As(err, &coded):
		return oneLine(err.Error()) // the command line's own words already
	case errors.Is(err, board.ErrUnorderedStatus):
		// The board names the row, its status and the target; the command line
		// names the order and the flag.
		return c.explain(err) + " (" + statusOrder() + "); give -allow-unordered to overwrite it"
	}
	return c.explain(err)
}

// explain renders an error of the library, whose text is written for a Go
// programmer ("Read adir: atomicfile: not a regular file: directory"), for
// a person: a file that is not a regular file is named with what it is and
// what it should be ("adir is a directory, not a ledger file"), a loop the
// root lacks by its name and root ("no loop nope in DIR"); otherwise the
// text is kept without the Go operation of each *fs.PathError ("Read adir:"
// becomes "adir:"), the package names ("loopstate: Create: ") and the text
// of a sentinel the message has already said in words (": file already
// exists", ": not found", ": invalid argument"). The exit code is
// exitCode's, from the same error, which this leaves alone.
func (c *cli) explain(err error) string {
	if pe, kind, ok := notRegular(err); ok {
		return fmt.Sprintf("%s is %s, not %s", pe.Path, article(kind), c.fileNoun(pe.Path))
	}
	if strings.HasPrefix(c.name, "loop ") && errors.Is(err, filetxn.ErrNotFound) && len(c.pos) > 0 && c.flag("root") != "" {
		return fmt.Sprintf("no loop %s in %s", c.pos[0], c.flag("root"))
	}
	// The package names go first: once an operation is dropped, the path
	// after it could be taken for one ("Decode board: " of a file named
	// board).
	msg := libraryPrefix.ReplaceAllString(err.Error(), "$1")
	for e := err; e != nil; e = errors.Unwrap(e) {
		if pe, ok := e.(*fs.PathError); ok && pe.Op != "" && pe.Path != "" {
			msg = strings.ReplaceAll(msg, pe.Op+" "+pe.Path+": ", pe.Path+": ")
		}
	}
	for _, sentinel := range []error{fs.ErrExist, filetxn.ErrNotFound, filetxn.ErrInvalidArgument} {
		said := strings.TrimPrefix(sentinel.Error(), "filetxn: ")
		if errors.Is(err, sentinel) && strings.HasSuffix(msg, ": "+said) {
			msg = strings.TrimSuffix(msg, ": "+said)
		}
	}
	return oneLine(msg)
}

// libraryPrefix matches a package's name at the start of an error's text
// or of a wrapped one, with the Go operation that may follow it
// ("loopstate: Create: ", "board: ").
var libraryPrefix = regexp.MustCompile(`(^|: )(?:filetxn|atomicfile|ledger|board|loopstate|harness|lock): (?:[A-Z][A-Za-z]*: )?`)

// notRegular returns, for an error that wraps atomicfile.ErrNotRegular, the
// *fs.PathError nearest to it, which names the file, and the kind of file
// found there ("directory", "named pipe"; "" when not said).
func notRegular(err error) (*fs.PathError, string, bool) {
	var pe *fs.PathError
	for e := err; e != nil; e = errors.Unwrap(e) {
		if p, ok := e.(*fs.PathError); ok {
			pe = p
		}
		if errors.Unwrap(e) == atomicfile.ErrNotRegular || e == atomicfile.ErrNotRegular {
			if pe == nil {
				return nil, "", false
			}
			kind, _ := strings.CutPrefix(e.Error(), atomicfile.ErrNotRegular.Error())
			return pe, strings.TrimPrefix(kind, ": "), true
		}
	}
	return nil, "", false
}

// article returns kind with its indefinite article, "a directory", "an
// irregular file"; "" is "not a regular file" said otherwise.
func article(kind string) string {
	switch {
	case kind == "":
		return "something other than a regular file"
	case strings.ContainsRune("aeiou", rune(kind[0])):
		return "an " + kind
	}
	return "a " + kind
}

// fileNoun says what the file at path should be for the command: the
// ledger (or its archive) or the board given with -file, a loop's state,
// a lock file, else a regular file.
func (c *cli) fileNoun(path string) string {
	file := c.flag("file")
	switch {
	case file != "" && (filepath.Clean(path) == filepath.Clean(file) ||
		filepath.Clean(path) == filepath.Join(filepath.Dir(file), "deferred-work-archive.md")) && strings.HasPrefix(c.name, "ledger "):
		return "a ledger file"
	case file != "" && filepath.Clean(path) == filepath.Clean(file) && strings.HasPrefix(c.name, "board "):
		return "a board file"
	case filepath.Base(path) == ".state.loop":
		return "a loop state file"
	case strings.HasSuffix(path, ".lock"), c.name == "lock holder":
		return "a lock file"
	}
	return "a regular file"
}

// flag returns the value of the command's flag name, "" when it has none or
// the command line has not been parsed yet.
func (c *cli) flag(name string) string {
	if c.flags == nil {
		return ""
	}
	if f := c.flags.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// oneLine returns s with every run of white space, line breaks included,
// made one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
