package runner

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/filetxn/filetxn"
)

// An Extension adds to the command line what another module provides: a
// main that imports that module passes it to Main. It may add global flags,
// give every ledger and board store options (a backend to keep them in,
// with filetxn.WithBackend), refuse the loop commands, and add commands. A
// zero field adds nothing.
type Extension struct {
	// Usage is the extension's global flags as the usage line of
	// looprunner -h shows them: "[-etcd ENDPOINTS]".
	Usage string
	// Help is a paragraph that looprunner -h prints last; it ends with a
	// newline.
	Help string
	// Flags defines the extension's global flags on fs. It is called for
	// every flag set the command line makes, as the global flags may come
	// before or after the command: it must bind each flag to the same
	// variable each time, with that variable's current value as its default.
	Flags func(fs *flag.FlagSet)
	// StoreOptions returns the options of every ledger and board store,
	// applied after the command line's own, so that they win. It is called
	// at most once per command, after the command's flags are parsed and
	// before its first store is opened; an error fails the command.
	StoreOptions func(c *Cmd) ([]filetxn.Option, error)
	// Loops is called before a loop command (or a batch's loop operation)
	// looks at its root; an error refuses the command with that error.
	Loops func(c *Cmd) error
	// Commands are the extension's commands by area ("ledger", "board",
	// "loop", "lock"; "" for a command outside any area) and name.
	Commands map[string]map[string]Command
	// Explain is called with the error of a failed command before it is
	// printed; the error it returns is printed, and decides the exit code,
	// instead. It may return err itself.
	Explain func(c *Cmd, err error) error
	// Close is called once the command has run, whatever its outcome.
	Close func()
}

// A Command is a command that an Extension adds.
type Command struct {
	// Args are its positional arguments, for the usage line: "FILE".
	Args string
	// Summary says what it does, in one line.
	Summary string
	// Details is more help, printed after the flags; it may be "".
	Details string
	// Run runs the command with the arguments that follow its name. Its
	// error decides the exit code (see Usagef, NotFoundf, Refusedf; a
	// lock busy past -lock-timeout is 75, a file it does not understand
	// 65) and is printed as one line that starts with the command's name.
	Run func(c *Cmd, args []string) error
}

// A Cmd is the command line while an extension's hook or command runs:
// its global flags, its output and the options it gives the stores. It is
// valid until Main returns.
type Cmd struct{ c *cli }

// Name returns the command being run, "ledger import".
func (x *Cmd) Name() string { return x.c.name }

// FlagSet returns a new flag set for the command that holds the global
// flags already, for Parse.
func (x *Cmd) FlagSet() *flag.FlagSet { return x.c.flagSet(x.c.name) }

// Parse parses args with fs, allowing flags after the positional arguments,
// and returns the positional arguments; those after a "--" are never flags.
// The flags named in required must then be non-empty. With -h it prints the
// command's help on stdout and returns an error that Main turns into exit
// 0; the command must then return it.
func (x *Cmd) Parse(fs *flag.FlagSet, args []string, required ...string) ([]string, error) {
	return x.c.parse(fs, args, required...)
}

// JSON reports whether -json was given: the command prints one JSON
// document (see PrintJSON) instead of text.
func (x *Cmd) JSON() bool { return x.c.json }

// PrintJSON prints v as one indented JSON document on stdout.
func (x *Cmd) PrintJSON(v any) error { return x.c.printJSON(v) }

// Stdout returns the command's standard output.
func (x *Cmd) Stdout() io.Writer { return x.c.stdout }

// Stderr returns the command's standard error, for progress that is not
// its output.
func (x *Cmd) Stderr() io.Writer { return x.c.stderr }

// Context returns the context that bounds the command's lock waits:
// -lock-timeout from now, or no bound with -lock-timeout 0 (the options of
// EngineOptions then try each lock once).
func (x *Cmd) Context() (context.Context, context.CancelFunc) { return x.c.lockCtx() }

// StateRoot returns the directory of the sidecar lock files of ledgers and
// boards on files: -state-dir, else $FILETXN_STATE_DIR, else bmad-loop's
// state root, made absolute.
func (x *Cmd) StateRoot() (string, error) { return x.c.stateRoot() }

// EngineOptions returns the options the command line gives every store
// besides the state root and the extensions' options: the command's name as
// its locks' purpose, a message after a second of waiting for a lock, and,
// with -lock-timeout 0, filetxn.WithNoWait.
func (x *Cmd) EngineOptions() []filetxn.Option { return x.c.engineOptions() }

// Usagef returns the error of a command line that cannot be run (exit 2).
func Usagef(format string, args ...any) error { return usagef(format, args...) }

// NotFoundf returns the error of a file, entry or document that does not
// exist (exit 3).
func NotFoundf(format string, args ...any) error { return notFoundf(format, args...) }

// Refusedf returns the error of an operation refused by a guard (exit 1).
func Refusedf(format string, args ...any) error { return refusedf(format, args...) }

// Busyf returns the error of a command that gave up waiting, for a lock
// or a service, at -lock-timeout, having written nothing (exit 75).
func Busyf(format string, args ...any) error {
	return &codeError{code: exitBusy, msg: fmt.Sprintf(format, args...)}
}

// explainExt passes err through the extensions' Explain.
func (c *cli) explainExt(err error) error {
	for _, e := range c.exts {
		if e.Explain != nil {
			err = e.Explain(&Cmd{c}, err)
		}
	}
	return err
}

// extend makes the command line c runs: the core's areas and commands, and
// those of exts.
func (c *cli) extend(exts []Extension) {
	c.exts = exts
	c.areas = areas
	c.topLevel = maps.Clone(topLevel)
	c.commands = make(map[string]map[string]command, len(commands))
	for a, cmds := range commands {
		c.commands[a] = maps.Clone(cmds)
	}
	for _, e := range exts {
		for a, cmds := range e.Commands {
			into := c.topLevel
			if a != "" {
				if into = c.commands[a]; into == nil {
					panic(fmt.Sprintf("runner: an extension's commands are in the area %q, which the command line does not have", a))
				}
			}
			for name, ec := range cmds {
				if _, ok := into[name]; ok || (a == "" && (name == "help" || slices.ContainsFunc(areas, func(x area) bool { return x.name == name }))) {
					panic(fmt.Sprintf("runner: an extension's command %q is already a command", name))
				}
				run := ec.Run
				into[name] = command{
					run:     func(c *cli, args []string) error { return run(&Cmd{c}, args) },
					args:    ec.Args,
					summary: ec.Summary,
					details: ec.Details,
				}
			}
		}
	}
}

// closeExtensions calls each extension's Close.
func (c *cli) closeExtensions() {
	for _, e := range c.exts {
		if e.Close != nil {
			e.Close()
		}
	}
}

// extFlag reports whether name is a global flag of an extension.
func (c *cli) extFlag(name string) bool {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	for _, e := range c.exts {
		if e.Flags != nil {
			e.Flags(fs)
		}
	}
	return fs.Lookup(name) != nil
}

// extOptions is what the extensions' StoreOptions returned.
type extOptions struct {
	opts []filetxn.Option
	err  error
}

// storeOptions returns the extensions' options for ledger and board
// stores, asking them once.
func (c *cli) storeOptions() ([]filetxn.Option, error) {
	if c.extOpts == nil {
		c.extOpts = &extOptions{}
		for _, e := range c.exts {
			if e.StoreOptions == nil {
				continue
			}
			opts, err := e.StoreOptions(&Cmd{c})
			if err != nil {
				c.extOpts.err = err
				break
			}
			c.extOpts.opts = append(c.extOpts.opts, opts...)
		}
	}
	return c.extOpts.opts, c.extOpts.err
}

// backendOf returns the backend that the extensions' options keep the
// store at path in, and its document's name there; a nil backend for a
// local file.
func (c *cli) backendOf(path string) (filetxn.Backend, string, error) {
	opts, err := c.storeOptions()
	if err != nil || len(opts) == 0 {
		return nil, "", err
	}
	s, err := filetxn.NewStore[*[]byte](path, rawCodec{}, opts...)
	if err != nil {
		return nil, "", err
	}
	return s.Backend(), s.Name(), nil
}

// checkLoops asks the extensions whether a loop command may run.
func (c *cli) checkLoops() error {
	for _, e := range c.exts {
		if e.Loops == nil {
			continue
		}
		if err := e.Loops(&Cmd{c}); err != nil {
			return err
		}
	}
	return nil
}

// rawCodec is the codec of a store whose document is its bytes.
type rawCodec struct{}

func (rawCodec) Decode(data []byte) (*[]byte, error) { return &data, nil }
func (rawCodec) Encode(doc *[]byte) ([]byte, error)  { return *doc, nil }
