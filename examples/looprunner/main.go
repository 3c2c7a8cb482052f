// Command looprunner is a thin command line over filetxn's typed stores: the
// deferred-work ledger, the sprint-status board and the loop state, plus the
// lock diagnostics and a demo that races worker processes on all three.
//
//	looprunner [-state-dir DIR] [-lock-timeout DUR] [-json] <area> <command> [flags] [args]
//
//	looprunner demo [-procs N] [-n M] [-dir DIR]
//	looprunner ledger add     -file F -title T -origin O -source-spec S -reason R [-location L] [-severity X]
//	looprunner ledger close   -file F -date YYYY-MM-DD -note N [-op OPID] ID...
//	looprunner ledger reopen  -file F -note N -op OPID ID...
//	looprunner ledger decide  -file F -date D -label L [-detail X] [-close-note N] ID
//	looprunner ledger archive -file F [-before D] [-stamp D] [-dry-run]
//	looprunner ledger list    -file F [-status open|done|all]
//	looprunner board advance  -file F [-now STR] [-allow-regression] [-allow-unordered] KEY STATUS
//	looprunner board show     -file F
//	looprunner loop create    -root DIR [-template T] [-paused] [gate flags] NAME
//	looprunner loop pause|resume|approve|check-gate|show|delete -root DIR NAME
//	looprunner loop enable-schedule|disable-schedule -root DIR NAME
//	looprunner loop list      -root DIR
//	looprunner loop tick      -root DIR [-trigger manual|schedule] [-timeout DUR] NAME -- CMD [ARG...]
//	looprunner lock holder    PATH
//	looprunner lock sidecar   FILE
//
// Every behaviour is a call into the packages; this command only parses
// arguments and prints. The global flags may also be given after the
// command. Exit codes: 0 done, 1 refused by a guard, 2 usage, 3 no such file
// or loop, 4 halted, 5 paused, 65 a file it does not understand, 75 the lock
// was busy past -lock-timeout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/filetxn/filetxn/lock"
)

// defaultLockTimeout is how long a command waits for a busy lock by default.
const defaultLockTimeout = 30 * time.Second

// envStateDir names the environment variable that overrides the default
// state directory.
const envStateDir = "FILETXN_STATE_DIR"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// cli is one invocation: the global flags, the command being run and where
// it prints.
type cli struct {
	stateDir    string        // -state-dir; "" means the default
	lockTimeout time.Duration // -lock-timeout
	json        bool          // -json
	name        string        // the command, "ledger add"; errors start with it

	stdin          io.Reader
	stdout, stderr io.Writer

	reported sync.Once // the lock-wait message is printed once per invocation
	printed  bool      // a JSON document is on stdout already
}

// command runs one command with the arguments after its name.
type command struct {
	run     func(c *cli, args []string) error
	summary string
}

// commands lists every area and its commands.
var commands = map[string]map[string]command{
	"ledger": {
		"add":     {ledgerAdd, "append an entry; prints the minted id"},
		"close":   {ledgerClose, "close open entries"},
		"reopen":  {ledgerReopen, "undo reopenable closes made with -op"},
		"decide":  {ledgerDecide, "record a decision on an entry (and close it with -close-note)"},
		"archive": {ledgerArchive, "move closed entries to the archive file"},
		"list":    {ledgerList, "list entries"},
	},
	"board": {
		"advance": {boardAdvance, "move a row forward; prints the status it ends at"},
		"show":    {boardShow, "print epics and stories"},
	},
	"loop": {
		"create":           {loopCreate, "create a loop"},
		"pause":            {loopPause, "pause a running loop"},
		"resume":           {loopResume, "resume a paused loop"},
		"approve":          {loopApprove, "release a halted loop"},
		"check-gate":       {loopCheckGate, "evaluate the gates (exit 4 halted, 5 paused)"},
		"show":             {loopShow, "print a loop's state"},
		"list":             {loopList, "list the loops of a root"},
		"tick":             {loopTick, "run one tick with a command as its harness"},
		"delete":           {loopDelete, "delete a loop"},
		"enable-schedule":  {loopEnableSchedule, "let scheduled ticks run"},
		"disable-schedule": {loopDisableSchedule, "make scheduled ticks skip"},
	},
	"lock": {
		"holder":  {lockHolder, "say who holds a lock file"},
		"sidecar": {lockSidecar, "print the sidecar lock file of a data file"},
	},
}

// run runs the command line args and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{name: "looprunner", lockTimeout: defaultLockTimeout, stdin: stdin, stdout: stdout, stderr: stderr}
	fs := c.flagSet("looprunner")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.usage()
		}
		return c.fail(flagError(err))
	}
	rest := fs.Args()
	if len(rest) == 0 {
		c.usage()
		return exitUsage
	}
	area := rest[0]
	if area == "demo" {
		c.name = "demo"
		return c.fail(demo(c, rest[1:]))
	}
	if area == "help" {
		c.usage()
		return exitOK
	}
	cmds, ok := commands[area]
	if !ok {
		return c.fail(usagef("unknown area %q (want demo, ledger, board, loop or lock)", area))
	}
	if len(rest) < 2 {
		return c.fail(usagef("%s: missing command (want %s)", area, strings.Join(names(cmds), ", ")))
	}
	cmd, ok := cmds[rest[1]]
	if !ok {
		return c.fail(usagef("%s: unknown command %q (want %s)", area, rest[1], strings.Join(names(cmds), ", ")))
	}
	c.name = area + " " + rest[1]
	return c.fail(cmd.run(c, rest[2:]))
}

func names(cmds map[string]command) []string {
	out := make([]string, 0, len(cmds))
	for n := range cmds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (c *cli) usage() {
	fmt.Fprintln(c.stderr, "usage: looprunner [-state-dir DIR] [-lock-timeout DUR] [-json] <area> <command> [flags] [args]")
	fmt.Fprintln(c.stderr, "\n  demo [-procs N] [-n M] [-dir DIR]   race worker processes on a ledger, a board and a loop")
	for _, area := range []string{"ledger", "board", "loop", "lock"} {
		fmt.Fprintln(c.stderr)
		for _, n := range names(commands[area]) {
			fmt.Fprintf(c.stderr, "  %-24s %s\n", area+" "+n, commands[area][n].summary)
		}
	}
	fmt.Fprintln(c.stderr, "\nRun 'looprunner <area> <command> -h' for a command's flags.")
}

// flagSet returns a flag set for the command name that already holds the
// global flags, so that they may be given before or after the command.
func (c *cli) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.stateDir, "state-dir", c.stateDir, "root for sidecar lock files (default $"+envStateDir+", else the per-user state directory of filetxn)")
	fs.DurationVar(&c.lockTimeout, "lock-timeout", c.lockTimeout, "how long to wait for a busy lock (0: try once)")
	fs.BoolVar(&c.json, "json", c.json, "print one JSON document on stdout")
	fs.Usage = func() {} // printed by parse, for -h only
	return fs
}

// printDefaults prints the flags of fs, for -h.
func (c *cli) printDefaults(fs *flag.FlagSet) {
	fmt.Fprintf(c.stderr, "usage of looprunner %s:\n", fs.Name())
	fs.SetOutput(c.stderr)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parse parses args with fs, allowing flags after positional arguments, and
// returns the positional arguments; those after a "--" are never flags.
// The flags named in required must then be non-empty (see need).
func (c *cli) parse(fs *flag.FlagSet, args []string, required ...string) ([]string, error) {
	pos, after, err := c.parseDashDash(fs, args)
	if err != nil {
		return nil, err
	}
	if err := need(fs, required...); err != nil {
		return nil, err
	}
	return append(pos, after...), nil
}

// parseNoArgs is parse for a command that takes no positional arguments:
// any is a usage error, reported after the missing flags.
func (c *cli) parseNoArgs(fs *flag.FlagSet, args []string, required ...string) error {
	pos, err := c.parse(fs, args, required...)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected arguments %q", pos)
	}
	return nil
}

// parseOne is parse for a command that takes exactly one positional
// argument, a what; it returns that argument.
func (c *cli) parseOne(fs *flag.FlagSet, args []string, what string) (string, error) {
	pos, err := c.parse(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("want one %s, got %d arguments", what, len(pos))
	}
	return pos[0], nil
}

// parseDashDash is parse, except that the arguments after a "--" are
// returned apart: a command line to run.
func (c *cli) parseDashDash(fs *flag.FlagSet, args []string) (pos, after []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printDefaults(fs)
			}
			return nil, nil, flagError(err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return pos, rest, nil
		}
		if len(rest) == 0 {
			return pos, nil, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError turns an error of the flag package into a usage error; -h is
// not an error.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	return usagef("%v", err)
}

// stateRoot returns the root for sidecar lock files: -state-dir, else
// $FILETXN_STATE_DIR, else lock.UserStateDir("filetxn"), made absolute.
func (c *cli) stateRoot() (string, error) {
	dir := c.stateDir
	if dir == "" {
		dir = os.Getenv(envStateDir)
	}
	if dir == "" {
		d, err := lock.UserStateDir("filetxn")
		if err != nil {
			return "", fmt.Errorf("no state directory (give -state-dir or set $%s): %w", envStateDir, err)
		}
		dir = d
	}
	return filepath.Abs(dir)
}

// lockCtx returns the context that bounds a lock wait of the ledger and
// board stores: -lock-timeout from now. A timeout of 0 gives a context that
// does not end; the stores are then opened with filetxn.WithNoWait.
func (c *cli) lockCtx() (context.Context, context.CancelFunc) {
	if c.lockTimeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), c.lockTimeout)
}

// printJSON prints v as one indented JSON document on stdout.
func (c *cli) printJSON(v any) error {
	c.printed = true
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printf prints a line of text output.
func (c *cli) printf(format string, args ...any) {
	fmt.Fprintf(c.stdout, format, args...)
}

// need returns a usage error naming the flags of fs among names that are
// empty. Every name must be a flag of fs.
func need(fs *flag.FlagSet, names ...string) error {
	var missing []string
	for _, name := range names {
		if fs.Lookup(name).Value.String() == "" {
			missing = append(missing, "-"+name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return usagef("missing %s", strings.Join(missing, ", "))
}

// openExisting returns open(path), for commands that read a file rather
// than create one: when the file at path does not exist it returns a
// not-found error (exit 3) instead, and any other error of os.Stat as is.
func openExisting[S any](path string, open func(string) (S, error)) (S, error) {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		err = notFoundf("no such file: %s", path)
	}
	if err != nil {
		var zero S
		return zero, err
	}
	return open(path)
}
