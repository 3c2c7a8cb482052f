package ledger

import (
	"bytes"
	"strings"
)

// archiveName is the base name of the archive file, a sibling of the ledger.
const archiveName = "deferred-work-archive.md"

// Archivable returns the ids [Doc.ArchiveInto] would move with the same
// before, in ledger order, without changing anything: the entries whose status
// is exactly "done YYYY-MM-DD" with a real date, closed strictly before
// before ("" for no cutoff), that are not already stubs. Open entries and
// prose are never eligible.
//
// Errors: an error wrapping filetxn.ErrInvalidArgument for a before that is
// neither "" nor a real date; a *filetxn.FormatError keyed by the id when an
// eligible entry's id names several entries (a corrupt ledger is not archived
// until it is fixed by hand).
func (d *Doc) Archivable(before string) ([]string, error) {
	if err := checkArchiveArgs("Archivable", before, ""); err != nil {
		return nil, err
	}
	el, err := d.eligible(before)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(el))
	for i, x := range el {
		ids[i] = x.e.id
	}
	return ids, nil
}

// checkArchiveArgs checks op's before and stamp, each either "" or a real
// date.
func checkArchiveArgs(op, before, stamp string) error {
	if before != "" {
		if err := checkDate(op, "before", before); err != nil {
			return err
		}
	}
	if stamp != "" {
		return checkDate(op, "stamp", stamp)
	}
	return nil
}

type eligibleEntry struct {
	e     *entry
	close string
}

func (d *Doc) eligible(before string) ([]eligibleEntry, error) {
	p := d.parsed()
	var out []eligibleEntry
	for i := range p.entries {
		e := &p.entries[i]
		cd := closeDate(e)
		if cd == "" || before != "" && cd >= before || isStub(p.body(e)) {
			continue
		}
		if err := p.dupErr(e.id); err != nil {
			return nil, err
		}
		out = append(out, eligibleEntry{e, cd})
	}
	return out, nil
}

func closeDate(e *entry) string {
	if !e.done() {
		return ""
	}
	f := strings.FieldsFunc(e.status, isSpace)
	if len(f) != 2 || !validDate(f[1]) {
		return ""
	}
	return f[1]
}

// ArchiveInto moves the eligible closed entries (see [Doc.Archivable]) into
// archive, the parsed archive file (empty when it does not exist), and returns
// their ids in ledger order.
//
// Each moved body is appended to archive verbatim with "archived: <stamp>"
// inserted under its status line, unless archive already holds a block for the
// id with the same close date and the same body apart from its archived: lines
// (left by a run of bmad-loop's archiver, or of an older version of this
// package, that crashed between its two writes): then the body is not
// appended again and the stub takes that block's stamp. In the ledger each moved entry
// is replaced by a stub: heading, blank line, status, the adjacent reopenable
// resolution lines if any, every live gate:, origin: and source_spec: line,
// and "archived: <stamp>", then a blank line. This is the stub bmad-loop's
// archiver recognizes; a stub that also keeps severity: or priority: lines, as
// this package wrote before, is still read as a stub and never archived again.
// A stub's severity is in its archived body, not in the stub.
//
// A caller that writes the two files one after the other writes archive
// first, so that a crash in between leaves every body in at least one file
// ([Store.Archive] publishes both in one commit). stamp must be a real date.
func (d *Doc) ArchiveInto(archive *Doc, before, stamp string) ([]string, error) {
	if err := checkArchiveArgs("ArchiveInto", before, stamp); err != nil {
		return nil, err
	}
	if err := checkDate("ArchiveInto", "stamp", stamp); err != nil {
		return nil, err
	}
	el, err := d.eligible(before)
	if err != nil || len(el) == 0 {
		return nil, err
	}
	p := d.parsed()

	type twin struct{ close, body, stamp string }
	ap := archive.parsed()
	twins := make(map[string]twin)
	for i := range ap.entries {
		ae := &ap.entries[i]
		lines := archivedLines(ap, ae)
		if len(lines) == 0 {
			continue
		}
		v := ap.line(lines[0])
		twins[ae.id] = twin{closeDate(ae), bodyWithoutArchived(ap, ae, lines), trimSpace(v[strings.IndexByte(v, ':')+1:])}
	}

	var blocks strings.Builder
	recovered := make(map[string]string)
	for _, x := range el {
		e := x.e
		if t, ok := twins[e.id]; ok && t.close == x.close && t.body == bodyWithoutArchived(p, e, archivedLines(p, e)) {
			recovered[e.id] = t.stamp
			continue
		}
		blocks.WriteString(p.text[e.start:e.statusEnd])
		blocks.WriteString("\narchived: " + stamp)
		blocks.WriteString(p.text[e.statusEnd:e.end])
	}
	if blocks.Len() > 0 {
		archive.appendText(separator(archive.text) + blocks.String())
	}

	text := p.text
	ids := make([]string, len(el))
	for i := len(el) - 1; i >= 0; i-- {
		e := el[i].e
		ids[i] = e.id
		st, ok := recovered[e.id]
		if !ok {
			st = stamp
		}
		var b strings.Builder
		b.WriteString("### " + e.id + ": " + e.title + "\n\nstatus: done " + el[i].close + "\n")
		for _, l := range preservedLines(p, e) {
			b.WriteString(l + "\n")
		}
		b.WriteString("archived: " + st + "\n\n")
		text = text[:e.start] + b.String() + text[e.end:]
	}
	d.setText(text)
	return ids, nil
}

// separator is what goes between existing text and an appended block: nothing
// after a blank line or at the start, a newline after a complete line, two
// newlines after an unterminated one.
func separator(text []byte) string {
	switch {
	case len(text) == 0 || bytes.HasSuffix(text, []byte("\n\n")):
		return ""
	case bytes.HasSuffix(text, []byte("\n")):
		return "\n"
	}
	return "\n\n"
}

// archivedLines returns the indexes of the entry's live (unfenced) lines that
// start with "archived:".
func archivedLines(p *parsed, e *entry) []int {
	var ks []int
	for k := e.line + 1; k < e.endLine; k++ {
		if !p.fenced[k] && strings.HasPrefix(p.line(k), "archived:") {
			ks = append(ks, k)
		}
	}
	return ks
}

// bodyWithoutArchived is the body without the given whole lines and without
// trailing newlines: the comparison key of the crash-recovery skip.
func bodyWithoutArchived(p *parsed, e *entry, lines []int) string {
	if len(lines) == 0 {
		return strings.TrimRight(p.body(e), "\n")
	}
	var b strings.Builder
	at := e.start
	for _, k := range lines {
		b.WriteString(p.text[at:p.starts[k]])
		at = p.lineOffset(k + 1)
		if at > e.end {
			at = e.end
		}
	}
	b.WriteString(p.text[at:e.end])
	return strings.TrimRight(b.String(), "\n")
}

// preservedLines returns the lines a stub keeps: the reopenable resolution
// pair when it sits directly under the status line (as one string), then every
// live gate:, origin: and source_spec: line, in order. These are exactly the
// lines bmad-loop's stub grammar allows between the status and archived: lines;
// a severity: line there makes its archiver take the stub for an entry and
// archive it again.
func preservedLines(p *parsed, e *entry) []string {
	var out []string
	if m := undoTail.FindStringIndex(p.text[e.statusEnd:e.end]); m != nil {
		out = append(out, p.text[e.statusEnd+1:e.statusEnd+m[1]])
	}
	for k := e.line + 1; k < e.endLine; k++ {
		if p.fenced[k] {
			continue
		}
		if l := p.line(k); stubField(l) {
			out = append(out, l)
		}
	}
	return out
}

// stubField reports whether a stub keeps line l: a gate:, origin: or
// source_spec: field.
func stubField(l string) bool {
	return strings.HasPrefix(l, "gate:") || strings.HasPrefix(l, "origin:") || strings.HasPrefix(l, "source_spec:")
}

// isStub reports whether body (of a done entry) has exactly the shape of a
// stub: heading, blank line, "status: done YYYY-MM-DD", an optional
// resolution/resolution-undo pair, field lines, then a final "archived: "
// line. The field lines are those ArchiveInto keeps (stubField) and, for the
// stubs this package wrote before it matched bmad-loop's grammar, severity
// and priority lines.
func isStub(body string) bool {
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "### ") || !strings.Contains(lines[0][4:], ": ") || lines[1] != "" {
		return false
	}
	d, ok := strings.CutPrefix(lines[2], "status: done ")
	if !ok || !dateShape(d) {
		return false
	}
	i := 3
	if i+1 < len(lines) && strings.HasPrefix(lines[i], "resolution:") && undoShape(lines[i+1]) {
		i += 2
	}
	for i < len(lines) && (stubField(lines[i]) || isSeverityLine(lines[i])) {
		i++
	}
	return i == len(lines)-1 && strings.HasPrefix(lines[i], "archived: ")
}

func isSeverityLine(l string) bool {
	_, ok := severityKey(l)
	return ok
}

// dateShape matches [0-9]{4}-[0-9]{2}-[0-9]{2} exactly, without a calendar check.
func dateShape(s string) bool {
	if len(s) != 10 {
		return false
	}
	for i := 0; i < 10; i++ {
		if i == 4 || i == 7 {
			if s[i] != '-' {
				return false
			}
		} else if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// undoShape matches resolution-undo:[ \t]*[0-9a-f]{64}[ \t]+.* .
func undoShape(l string) bool {
	rest, ok := strings.CutPrefix(l, "resolution-undo:")
	if !ok {
		return false
	}
	i := skipBlanks(rest, 0)
	if len(rest) < i+65 {
		return false
	}
	for _, c := range []byte(rest[i : i+64]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return rest[i+64] == ' ' || rest[i+64] == '\t'
}
