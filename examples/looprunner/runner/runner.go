package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/filetxn/filetxn/ledger"
)

// defaultLockTimeout is how long a command waits for a busy lock by default.
const defaultLockTimeout = 30 * time.Second

// envStateDir names the environment variable that overrides the default
// state directory.
const envStateDir = "FILETXN_STATE_DIR"

// cli is one invocation: the global flags, the command being run and where
// it prints.
type cli struct {
	stateDir    string        // -state-dir; "" means the default
	lockTimeout time.Duration // -lock-timeout
	json        bool          // -json
	jsonAsked   bool          // -json is among the arguments, parsed yet or not (see jsonAsked)
	name        string        // the command, "ledger add"; errors start with it
	cmd         command       // the command being run; zero before one is chosen

	stdin          io.Reader
	stdout, stderr io.Writer

	flags *flag.FlagSet // the command's flags, once parsed: messages name its -file and -root
	pos   []string      // the command's positional arguments, once parsed

	reported sync.Once // the lock-wait message is printed once per invocation
	printed  bool      // a JSON document is on stdout already

	// The command line as extended (see extend): the areas, their
	// commands and the commands outside an area, and the extensions.
	areas    []area
	commands map[string]map[string]command
	topLevel map[string]command
	exts     []Extension
	extOpts  *extOptions // the extensions' store options, once asked for
}

// area is an area of commands, with what it works on.
type area struct{ name, summary string }

// command is one command of the command line.
type command struct {
	run     func(c *cli, args []string) error
	args    string // its positional arguments, for the usage line: "ID...", "KEY STATUS"
	summary string // what it does, in one line
	details string // more help, printed after the flags; may be ""
}

// areas lists the areas, in the order the usage prints them, each with
// what it works on.
var areas = []area{
	{"ledger", "a deferred-work ledger (deferred-work.md)"},
	{"board", "a sprint-status board (sprint-status.yaml)"},
	{"loop", "long-running loops: their state, gates and ticks"},
	{"lock", "lock diagnostics"},
}

// commands lists every area and its commands.
var commands = map[string]map[string]command{
	"ledger": {
		"add":     {ledgerAdd, "", "append an entry; prints the minted id, or says an open entry already has this origin and source spec", ""},
		"close":   {ledgerClose, "ID...", "close open entries; with -op the close can be undone by ledger reopen", ""},
		"reopen":  {ledgerReopen, "ID...", "undo closes made with the same -op and -note", ""},
		"decide":  {ledgerDecide, "ID", "record a decision on an entry, and with -close-note close it", ""},
		"archive": {ledgerArchive, "", "move closed entries to deferred-work-archive.md beside the ledger, leaving stubs", ""},
		"list":    {ledgerList, "", "list entries", ""},
	},
	"board": {
		"advance": {boardAdvance, "KEY STATUS", "move a row towards STATUS, never backwards; prints the status it ends at", boardAdvanceDetails},
		"show":    {boardShow, "", "print epics and stories, and the next actionable story", ""},
	},
	"loop": {
		"create":           {loopCreate, "NAME", "create a loop in DIR/loops/NAME", loopCreateDetails},
		"pause":            {loopPause, "NAME", "pause a running loop", ""},
		"resume":           {loopResume, "NAME", "resume a paused loop", ""},
		"approve":          {loopApprove, "NAME", "release a halted loop into a new gate window", ""},
		"check-gate":       {loopCheckGate, "NAME", "evaluate the gates and halt the loop if one trips (exit 4 halted, 5 paused)", ""},
		"show":             {loopShow, "NAME", "print a loop's state, read without the lock", ""},
		"list":             {loopList, "", "list the loops of a root, read without the lock", ""},
		"tick":             {loopTick, "NAME -- CMD [ARG...]", "run one tick with CMD as its harness", loopTickDetails},
		"delete":           {loopDelete, "NAME", "delete a loop", ""},
		"enable-schedule":  {loopEnableSchedule, "NAME", "let scheduled ticks (-trigger schedule) run", ""},
		"disable-schedule": {loopDisableSchedule, "NAME", "make scheduled ticks skip", ""},
	},
	"lock": {
		"holder":  {lockHolder, "PATH", "say whether a lock file is held, and by whom", ""},
		"sidecar": {lockSidecar, "FILE", "print the lock file that guards FILE under the state directory", ""},
	},
}

// topLevel lists the commands outside any area. "help" is run apart, as
// it looks the others up.
var topLevel = map[string]command{
	"batch":   {batchCmd, "", "apply operations read as JSON lines on stdin in one all-or-nothing commit", batchDetails},
	"demo":    {demo, "", "race worker processes on a ledger, a board and a loop, and check that nothing was lost", ""},
	"version": {version, "", "print the module version this binary was built from", ""},
}

// Main runs the looprunner command line args (without the program's name)
// with its standard streams and returns the exit code, for a main to pass to
// os.Exit; it prints what the command prints, and help and usage errors as
// the package doc says. exts extend the command line (see Extension), each
// closed once the command has run. Output that could not be written to
// stdout (a full disk, a closed pipe whose SIGPIPE is ignored) fails a
// command that succeeded otherwise, exit 1: a script that reads the output
// must not take its absence for success. The demo re-executes the running
// binary as its workers, so a main that calls Main runs the demo too. Main
// panics if an extension's command has the name of another command.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, exts ...Extension) int {
	return run(args, stdin, stdout, stderr, exts...)
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, exts ...Extension) int {
	out := &errWriter{w: stdout}
	c := &cli{name: "looprunner", lockTimeout: defaultLockTimeout, stdin: stdin, stdout: out, stderr: stderr}
	c.extend(exts)
	defer c.closeExtensions()
	code := c.run(args)
	if code == exitOK && out.err != nil {
		c.printed = true // a JSON error object would not be written either
		return c.fail(fmt.Errorf("writing the output: %w", out.err))
	}
	return code
}

// errWriter is a writer that remembers the first error of w's writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// run runs the command line args with c's writers and returns the exit code.
func (c *cli) run(args []string) int {
	c.jsonAsked = jsonAsked(args)
	fs := c.flagSet("looprunner")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.mainUsage(c.stdout)
			return exitOK
		}
		return c.fail(c.flagError(fs, err))
	}
	rest := fs.Args()
	if len(rest) == 0 {
		c.mainUsage(c.stderr)
		return exitUsage
	}
	name := rest[0]
	if name == "help" {
		return c.fail(c.help(rest[1:]))
	}
	if cmd, ok := c.topLevel[name]; ok {
		c.name, c.cmd = name, cmd
		return c.fail(cmd.run(c, rest[1:]))
	}
	cmds, ok := c.commands[name]
	if !ok {
		return c.fail(usagef("unknown command %q%s (want %s)", name, didYouMean(name, c.topNames()), strings.Join(c.topNames(), ", ")))
	}
	if len(rest) < 2 {
		return c.fail(usagef("%s: missing command (want %s); see 'looprunner %s -h'", name, strings.Join(names(cmds), ", "), name))
	}
	switch rest[1] {
	case "-h", "-help", "--help", "help":
		return c.fail(c.help(append([]string{name}, rest[2:]...)))
	}
	cmd, ok := cmds[rest[1]]
	if !ok {
		return c.fail(usagef("%s: unknown command %q%s (want %s)", name, rest[1], didYouMean(rest[1], names(cmds)), strings.Join(names(cmds), ", ")))
	}
	c.name, c.cmd = name+" "+rest[1], cmd
	return c.fail(cmd.run(c, rest[2:]))
}

// jsonAsked reports whether args ask for -json (or --json, -json=true)
// before any "--", as the flag sets would read them: a usage error that the
// flag sets report before they reach -json, such as an unknown flag in front
// of it, is then printed as JSON too.
func jsonAsked(args []string) bool {
	asked := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		b, err := strconv.ParseBool(value)
		asked = !hasValue || (err == nil && b)
	}
	return asked
}

// flagSet returns a flag set for the command name that already holds the
// global flags, so that they may be given before or after the command. A
// flag's usage names its placeholder in backquotes, as flag.PrintDefaults
// reads it; a usage that starts with "internal:" hides the flag from help.
func (c *cli) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.stateDir, "state-dir", c.stateDir, "the `DIR` of the sidecar lock files of ledgers and boards, DIR/locks/<hash>-<name>.lock (default $"+envStateDir+", else bmad-loop's state root: $BMAD_LOOP_STATE_DIR, else $XDG_STATE_HOME/bmad-loop, else ~/.local/state/bmad-loop)")
	fs.Var(durationValue{&c.lockTimeout}, "lock-timeout", "how long to wait for a busy lock, a `DURATION` such as 30s or 2m (0 tries once)")
	fs.BoolVar(&c.json, "json", c.json, "print one JSON document on stdout")
	for _, e := range c.exts {
		if e.Flags != nil {
			e.Flags(fs)
		}
	}
	fs.Usage = func() {} // help is printed by parse, for -h only
	return fs
}

// globalFlags names the flags every flag set holds (see flagSet).
var globalFlags = []string{"json", "lock-timeout", "state-dir"}

// parse parses args with fs, allowing flags after positional arguments, and
// returns the positional arguments; those after a "--" are never flags.
// The flags named in required must then be non-empty (see need); help
// marks them required.
func (c *cli) parse(fs *flag.FlagSet, args []string, required ...string) ([]string, error) {
	pos, after, err := c.parseDashDash(fs, args, required...)
	if err != nil {
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
func (c *cli) parseOne(fs *flag.FlagSet, args []string, what string, required ...string) (string, error) {
	pos, err := c.parse(fs, args, required...)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("want one %s, got %s", what, count(len(pos), "argument"))
	}
	return pos[0], nil
}

// count returns n and noun, in the plural unless n is 1: "no arguments",
// "1 argument", "2 arguments".
func count(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun + "s"
	case 1:
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// parseDashDash is parse, except that the arguments after a "--" are
// returned apart: a command line to run. With -h it prints the command's
// help on stdout and returns errHelp.
func (c *cli) parseDashDash(fs *flag.FlagSet, args []string, required ...string) (pos, after []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.commandHelp(c.stdout, fs, required)
			}
			return nil, nil, c.flagError(fs, err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			after = rest
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	c.flags, c.pos = fs, pos
	if err := need(fs, required...); err != nil {
		return nil, nil, err
	}
	return pos, after, nil
}

// stateRoot returns the root for sidecar lock files: -state-dir, else
// $FILETXN_STATE_DIR, else bmad-loop's state root (ledger.BmadLoopStateRoot:
// the stores' own default, so that the command excludes bmad-loop without
// configuration), made absolute.
func (c *cli) stateRoot() (string, error) {
	dir := c.stateDir
	if dir == "" {
		dir = os.Getenv(envStateDir)
	}
	if dir == "" {
		d, err := ledger.BmadLoopStateRoot()
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
func openExisting[S any](c *cli, path string, open func(string) (S, error)) (S, error) {
	var zero S
	b, name, err := c.backendOf(path)
	if err != nil {
		return zero, err
	}
	if b != nil {
		ctx, cancel := c.lockCtx()
		defer cancel()
		data, err := b.Get(ctx, name)
		if err != nil {
			return zero, &fs.PathError{Op: "Read", Path: path, Err: err}
		}
		if data == nil {
			return zero, notFoundf("no such document: %s", path)
		}
		return open(path)
	}
	_, err = os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		err = notFoundf("no such file: %s", path)
	}
	if err != nil {
		return zero, err
	}
	return open(path)
}
