package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/ledger"
)

// openLedger opens the ledger at file with its lock under the state
// directory (the sidecar bmad-loop takes when the state directory is its
// state root).
func (c *cli) openLedger(file string) (*ledger.Store, error) {
	root, err := c.stateRoot()
	if err != nil {
		return nil, err
	}
	ext, err := c.storeOptions()
	if err != nil {
		return nil, err
	}
	return ledger.Open(file, append(append([]filetxn.Option{filetxn.WithStateRoot(root)}, c.engineOptions()...), ext...)...)
}

// ledgerError adds the ledger's path to an error that names lines but not
// the file (an id carried by several entries, found by a Doc read with
// View; the Store's refusals name the file already).
func ledgerError(file string, err error) error {
	var pe *fs.PathError
	if errors.As(err, new(*filetxn.FormatError)) && !errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", file, err)
	}
	return err
}

// ledgerFlagError is a flag value the ledger refuses as an argument, in the
// command line's words: the flag, its value and what the value must be. It
// is an invalid argument (exit 2).
type ledgerFlagError struct{ flag, value, want string }

func (e *ledgerFlagError) Error() string { return fmt.Sprintf("-%s %q: %s", e.flag, e.value, e.want) }
func (e *ledgerFlagError) Unwrap() error { return filetxn.ErrInvalidArgument }

// emptyLedger returns an empty ledger, on which a Doc operation checks its
// arguments without any I/O.
func emptyLedger() *ledger.Doc { return must(ledger.Parse(nil)) }

// checkLedgerDate refuses a value of the date flag that the ledger's
// operations refuse as a date, before any file is read.
func checkLedgerDate(flag, value string) error {
	if _, err := emptyLedger().MarkDone(nil, value, ""); err != nil {
		return &ledgerFlagError{flag, value, "must be a calendar date, YYYY-MM-DD"}
	}
	return nil
}

func ledgerAdd(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the ledger `FILE` (deferred-work.md); created if missing")
	var spec ledger.Spec
	fset.StringVar(&spec.Title, "title", "", "the `TITLE` of the entry")
	fset.StringVar(&spec.Origin, "origin", "", "`WHERE` it was found (an open entry with this -origin and -source-spec makes the add a duplicate)")
	fset.StringVar(&spec.SourceSpec, "source-spec", "", "the `SPEC` it came from")
	fset.StringVar(&spec.Reason, "reason", "", "`WHY` it was deferred")
	fset.StringVar(&spec.Location, "location", "", "`WHERE` in the code (default n/a)")
	fset.StringVar(&spec.Severity, "severity", "", "its `SEVERITY`: critical, high, medium or low")
	if err := c.parseNoArgs(fset, args, "file", "title", "origin", "source-spec", "reason"); err != nil {
		return err
	}
	s, err := c.openLedger(*file)
	if err != nil {
		return err
	}
	if _, err := emptyLedger().Append(ledger.Spec{Origin: "-", Severity: spec.Severity}); err != nil {
		return &ledgerFlagError{"severity", spec.Severity, "must be one of critical, high, medium, low"}
	}
	ctx, cancel := c.lockCtx()
	defer cancel()
	ids, err := s.Append(ctx, spec)
	if err != nil {
		return err
	}
	id := ids[0]
	if c.json {
		return c.printJSON(struct {
			File      string `json:"file"`
			ID        string `json:"id"`
			Duplicate bool   `json:"duplicate"`
		}{*file, id, id == ""})
	}
	if id == "" {
		c.printf("duplicate: an open entry already has this origin and source_spec; nothing appended\n")
		return nil
	}
	c.printf("%s\n", id)
	return nil
}

// closeReport is the outcome of ledger close and ledger reopen, per id.
type closeReport struct {
	File        string   `json:"file"`
	Closed      []string `json:"closed,omitempty"`
	Reopened    []string `json:"reopened,omitempty"`
	AlreadyDone []string `json:"already_done,omitempty"`
	AlreadyOpen []string `json:"already_open,omitempty"`
	NotEligible []string `json:"not_eligible,omitempty"`
	Unknown     []string `json:"unknown,omitempty"`
	Malformed   []string `json:"malformed,omitempty"`
}

// outcome prints the report and returns the error for ids that were not
// handled: unknown ones (exit 3), then refused ones (exit 1). With -json a
// failure is one document, the failure's error and exit_code (as for every
// command) with the report's fields beside them.
func (c *cli) outcome(r closeReport) error {
	var err error
	switch {
	case len(r.Unknown) > 0:
		err = notFoundf("no entry %s in %s", strings.Join(r.Unknown, ", "), r.File)
	case len(r.Malformed) > 0:
		err = refusedf("%s: status is neither open nor done; not changed", strings.Join(r.Malformed, ", "))
	case len(r.NotEligible) > 0:
		err = refusedf("%s: not closed by this operation with this note; not reopened", strings.Join(r.NotEligible, ", "))
	}
	if c.json {
		if err == nil {
			return c.printJSON(r)
		}
		if perr := c.printJSON(struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
			closeReport
		}{c.message(err), exitCode(err), r}); perr != nil {
			return perr
		}
		return err
	}
	for _, l := range []struct {
		what string
		ids  []string
	}{{"closed", r.Closed}, {"reopened", r.Reopened}, {"already done", r.AlreadyDone}, {"already open", r.AlreadyOpen}} {
		if len(l.ids) > 0 {
			c.printf("%s: %s\n", l.what, strings.Join(l.ids, " "))
		}
	}
	return err
}

// idStates sorts requested ids by the state of the first entry with each id
// in one version of a ledger, each list in the order of the request.
type idStates struct {
	open, done, unknown, malformed []string
}

// classify returns the states of ids in d: unknown when no entry carries
// the id, else open, done or malformed (neither) as the entry's status says.
func classify(d *ledger.Doc, ids []string) idStates {
	var st idStates
	for _, id := range ids {
		e, ok := d.Entry(id)
		switch {
		case !ok:
			st.unknown = append(st.unknown, id)
		case e.Open():
			st.open = append(st.open, id)
		case e.Done():
			st.done = append(st.done, id)
		default:
			st.malformed = append(st.malformed, id)
		}
	}
	return st
}

// changeLedger runs op, Doc operations on the known ones among ids, in one
// MutateProbed of the ledger at file, which must exist, within -lock-timeout
// (a replay, which changes nothing, needs no lock), and
// returns what op returned with ids classified on the version op changed (or
// found needing no change). op first runs on an empty ledger with no ids, so
// that bad arguments are refused before the file is read or locked. The ids
// no entry carries, which the Doc operations refuse, are not given to op:
// the caller reports them from unknown after the others are done.
func (c *cli) changeLedger(file string, ids []string, op func(d *ledger.Doc, known []string) ([]string, error)) ([]string, idStates, error) {
	if _, err := op(emptyLedger(), nil); err != nil {
		return nil, idStates{}, err
	}
	s, err := openExisting(c, file, c.openLedger)
	if err != nil {
		return nil, idStates{}, err
	}
	ctx, cancel := c.lockCtx()
	defer cancel()
	var changed []string
	var was idStates
	_, err = s.MutateProbed(ctx, func(d *ledger.Doc) (err error) {
		was = classify(d, ids)
		known := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(was.unknown, id) })
		changed, err = op(d, known)
		return err
	})
	if err != nil {
		return nil, idStates{}, err
	}
	return changed, was, nil
}

func ledgerClose(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the ledger `FILE`")
	date := fset.String("date", "", "the `DATE` of the close, YYYY-MM-DD")
	note := fset.String("note", "", "the resolution `NOTE`")
	op := fset.String("op", "", "an operation id `OPID` that makes the close undoable by ledger reopen")
	ids, err := c.parse(fset, args, "file", "date", "note")
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usagef("no ids to close")
	}
	if err := checkLedgerDate("date", *date); err != nil {
		return err
	}
	var opts []ledger.CloseOption
	if *op != "" {
		opts = append(opts, ledger.Reopenable(*op))
	}
	closed, was, err := c.changeLedger(*file, ids, func(d *ledger.Doc, ids []string) ([]string, error) { return d.MarkDone(ids, *date, *note, opts...) })
	if err != nil {
		return err
	}
	return c.outcome(closeReport{File: *file, Closed: closed, AlreadyDone: was.done, Unknown: was.unknown, Malformed: was.malformed})
}

func ledgerReopen(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the ledger `FILE`")
	note := fset.String("note", "", "the resolution `NOTE` the close was made with")
	op := fset.String("op", "", "the operation id `OPID` the close was made with")
	ids, err := c.parse(fset, args, "file", "note", "op")
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usagef("no ids to reopen")
	}
	reopened, was, err := c.changeLedger(*file, ids, func(d *ledger.Doc, ids []string) ([]string, error) { return d.MarkOpen(ids, *note, *op) })
	if err != nil {
		return err
	}
	var notEligible []string
	for _, id := range was.done {
		if !slices.Contains(reopened, id) {
			notEligible = append(notEligible, id)
		}
	}
	return c.outcome(closeReport{File: *file, Reopened: reopened, AlreadyOpen: was.open, NotEligible: notEligible, Unknown: was.unknown, Malformed: was.malformed})
}

func ledgerDecide(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the ledger `FILE`")
	date := fset.String("date", "", "the `DATE` of the decision, YYYY-MM-DD")
	label := fset.String("label", "", "the decision `LABEL`, such as \"defer\" or \"fix now\"")
	detail := fset.String("detail", "", "`TEXT` that says why")
	closeNote := fset.String("close-note", "", "also close the entry, with the resolution `NOTE`")
	id, err := c.parseOne(fset, args, "id", "file", "date", "label")
	if err != nil {
		return err
	}
	if err := checkLedgerDate("date", *date); err != nil {
		return err
	}
	// The decision, then with -close-note the close, in one write: the
	// resolution line stays adjacent to the status line.
	_, was, err := c.changeLedger(*file, []string{id}, func(d *ledger.Doc, known []string) ([]string, error) {
		if len(known) == 0 {
			// An unknown id, or the check on an empty ledger: only the
			// date is checked (an empty batch checks its arguments).
			return d.MarkDone(nil, *date, *closeNote)
		}
		if err := d.RecordDecision(id, *date, *label, *detail); err != nil || *closeNote == "" {
			return nil, err
		}
		return d.MarkDone(known, *date, *closeNote)
	})
	if err != nil {
		return err
	}
	if len(was.unknown) > 0 {
		return notFoundf("no entry %s in %s", id, *file)
	}
	closed := *closeNote != "" && slices.Contains(was.open, id)
	if c.json {
		return c.printJSON(struct {
			File   string `json:"file"`
			ID     string `json:"id"`
			Closed bool   `json:"closed"`
		}{*file, id, closed})
	}
	if closed {
		c.printf("%s: decision recorded, closed\n", id)
	} else {
		c.printf("%s: decision recorded\n", id)
	}
	return nil
}

func ledgerArchive(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the ledger `FILE`")
	before := fset.String("before", "", "archive only entries closed before `DATE`, YYYY-MM-DD (default: all closed)")
	stamp := fset.String("stamp", "", "the `DATE` written on the stubs, YYYY-MM-DD (default: today)")
	dry := fset.Bool("dry-run", false, "print what would move, write nothing")
	if err := c.parseNoArgs(fset, args, "file"); err != nil {
		return err
	}
	s, err := openExisting(c, *file, c.openLedger)
	if err != nil {
		return err
	}
	dates := []struct{ flag, value string }{{"before", *before}, {"stamp", *stamp}}
	if *dry {
		dates = dates[:1] // the preview writes no stubs
	}
	for _, f := range dates {
		if f.value != "" {
			if err := checkLedgerDate(f.flag, f.value); err != nil {
				return err
			}
		}
	}
	archive := filepath.Join(filepath.Dir(*file), "deferred-work-archive.md") // the Store's archive, beside the ledger
	ctx, cancel := c.lockCtx()
	defer cancel()
	var ids []string
	if *dry {
		// The preview reads without the lock and writes nothing.
		var d *ledger.Doc
		if d, err = s.View(ctx); err == nil {
			ids, err = d.Archivable(*before)
		}
	} else {
		ids, err = s.Archive(ctx, *before, *stamp)
	}
	if err != nil {
		return ledgerError(*file, err)
	}
	if c.json {
		return c.printJSON(struct {
			File    string   `json:"file"`
			Archive string   `json:"archive"`
			IDs     []string `json:"ids"`
			DryRun  bool     `json:"dry_run"`
		}{*file, archive, nonNil(ids), *dry})
	}
	switch {
	case len(ids) == 0:
		c.printf("nothing to archive\n")
	case *dry:
		c.printf("would archive %s into %s\n", strings.Join(ids, " "), archive)
	default:
		c.printf("archived %s into %s\n", strings.Join(ids, " "), archive)
	}
	return nil
}

// entryJSON is one entry of ledger list -json.
type entryJSON struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	State    string `json:"state"` // open, done or malformed
	Severity string `json:"severity,omitempty"`
	Line     int    `json:"line"`
}

func ledgerList(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the ledger `FILE`")
	status := fset.String("status", "all", "list the entries whose `STATUS` is open or done, or all")
	if err := c.parseNoArgs(fset, args, "file"); err != nil {
		return err
	}
	if !slices.Contains([]string{"open", "done", "all"}, *status) {
		return usagef("-status %q: want open, done or all", *status)
	}
	s, err := openExisting(c, *file, c.openLedger)
	if err != nil {
		return err
	}
	d, err := s.View(context.Background())
	if err != nil {
		return err
	}
	out := []entryJSON{}
	for _, e := range d.Entries() {
		state := "malformed"
		switch {
		case e.Open():
			state = "open"
		case e.Done():
			state = "done"
		}
		if *status != "all" && state != *status {
			continue
		}
		out = append(out, entryJSON{ID: e.ID, Title: e.Title, Status: e.Status, State: state, Severity: e.Severity, Line: e.Line})
	}
	if c.json {
		return c.printJSON(out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, e := range out {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.ID, e.Status, e.Title)
	}
	return tw.Flush()
}

// must returns v and panics on err; for calls that cannot fail.
func must[T any](v T, err error) T {
	if err != nil {
		panic("looprunner: " + err.Error())
	}
	return v
}

// nonNil returns s, or an empty slice for nil, so that JSON prints [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
