package ledger

import (
	"strings"

	"github.com/filetxn/filetxn"
)

// parsed is the structure of one text: its lines, which of them sit inside a
// fenced code block, and the canonical entries. It is computed by parse and
// never modified; an edit produces a new text and a new parse.
type parsed struct {
	text    string
	starts  []int  // byte offset of each line; a text ending in "\n" has a last, empty line
	fenced  []bool // per line: inside a fenced code block (the opener line is not, the closer is)
	entries []entry
	first   map[string]int   // id -> index in entries of its first entry
	dups    map[string][]int // id -> indexes of every entry, for ids carried more than once
}

// entry is one canonical entry: byte offsets into parsed.text and line indexes.
type entry struct {
	id, title string
	start     int // offset of the heading line
	end       int // offset just past the entry's last byte
	line      int // 0-based index of the heading line
	endLine   int // index of the first line after the entry
	status    string
	statusLn  int // 0-based index of the status line, -1 when there is none
	statusBeg int // offset of the status line
	statusEnd int // offset of the status line's end (its "\n", or the text's end)
}

// severity returns the normalized severity of the entry's first unfenced
// severity field line, "" when there is none or its word is not an alias.
func (p *parsed) severity(e *entry) string {
	for k := e.line + 1; k < e.endLine; k++ {
		if p.fenced[k] {
			continue
		}
		if sev, ok := lineSeverity(p.line(k)); ok {
			return sev
		}
	}
	return ""
}

func (e *entry) open() bool { return e.statusLn >= 0 && firstField(e.status) == "open" }
func (e *entry) done() bool { return e.statusLn >= 0 && firstField(e.status) == "done" }

// line returns line k of p without its "\n".
func (p *parsed) line(k int) string {
	s := p.starts[k]
	e := len(p.text)
	if k+1 < len(p.starts) {
		e = p.starts[k+1] - 1
	}
	return p.text[s:e]
}

// lineOffset returns the offset of line k, or len(text) for k == len(starts).
func (p *parsed) lineOffset(k int) int {
	if k >= len(p.starts) {
		return len(p.text)
	}
	return p.starts[k]
}

func (p *parsed) body(e *entry) string { return p.text[e.start:e.end] }

// parse reads text the way bmad-loop's parse_ledger does (docs/formats/ledger.md):
// headings outside fences start entries, and an entry ends at the next
// heading, at an earlier ATX heading of any level, or at a flat source_spec
// bullet after its status line.
func parse(text string) *parsed {
	p := &parsed{text: text}
	n := strings.Count(text, "\n") + 1
	p.starts = make([]int, 1, n)
	for i := 0; ; {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		p.starts = append(p.starts, i)
	}
	p.fenced = fences(p)

	var heads []int
	for k := range p.starts {
		if !p.fenced[k] && isHeadingLine(p.line(k)) {
			heads = append(heads, k)
		}
	}
	if len(heads) == 0 {
		return p
	}
	p.entries = make([]entry, 0, len(heads))
	p.first = make(map[string]int, len(heads))
	for i, hk := range heads {
		endLine := len(p.starts)
		if i+1 < len(heads) {
			endLine = heads[i+1]
		}
		for k := hk + 1; k < endLine; k++ {
			if !p.fenced[k] && isATXHeading(p.line(k)) {
				endLine = k
				break
			}
		}
		status := -1
		for k := hk + 1; k < endLine; k++ {
			if !p.fenced[k] && strings.HasPrefix(p.line(k), "status:") {
				status = k
				break
			}
		}
		from := hk + 1
		if status >= 0 {
			from = status + 1
		}
		for k := from; k < endLine; k++ {
			if !p.fenced[k] && isFlatBullet(p.line(k)) {
				endLine = k
				break
			}
		}
		id, title := splitHeading(p.line(hk))
		e := entry{
			id:       id,
			title:    title,
			start:    p.starts[hk],
			end:      p.lineOffset(endLine),
			line:     hk,
			endLine:  endLine,
			statusLn: status,
		}
		if status >= 0 {
			l := p.line(status)
			e.status = trimSpace(l[len("status:"):])
			e.statusBeg = p.starts[status]
			e.statusEnd = e.statusBeg + len(l)
		}
		if j, seen := p.first[id]; seen {
			if p.dups == nil {
				p.dups = make(map[string][]int)
			}
			if p.dups[id] == nil {
				p.dups[id] = []int{j}
			}
			p.dups[id] = append(p.dups[id], len(p.entries))
		} else {
			p.first[id] = len(p.entries)
		}
		p.entries = append(p.entries, e)
	}
	return p
}

// find returns the first entry with id, or nil.
func (p *parsed) find(id string) *entry {
	if i, ok := p.first[id]; ok {
		return &p.entries[i]
	}
	return nil
}

// dupErr returns the *filetxn.FormatError, keyed by the id and at the line
// of its second heading, for an operation on an id that several entries
// carry; nil for any other id.
func (p *parsed) dupErr(id string) error {
	if _, ok := p.dups[id]; !ok {
		return nil
	}
	lines := p.dupLines(id)
	// Line is the heading that repeats the id: the second entry with it.
	return &filetxn.FormatError{Line: lines[1], Key: id, Err: &duplicateIDError{Lines: lines}}
}

// dupLines returns the 1-based lines of the headings of every entry with
// id, for an id that several entries carry.
func (p *parsed) dupLines(id string) []int {
	idx := p.dups[id]
	lines := make([]int, len(idx))
	for i, j := range idx {
		lines[i] = p.entries[j].line + 1
	}
	return lines
}

// fences marks the lines inside fenced code blocks, over the whole text: a
// line of up to three spaces and a run of three or more backticks or tildes
// opens a block (a backtick run whose info string holds a backtick is plain
// text); the block closes on a later line with the same character, a run at
// least as long and only whitespace after it. An opener that never closes is
// plain text. The opener line is outside the block and the closer inside,
// which is where bmad-loop's span bounds put them.
func fences(p *parsed) []bool {
	fenced := make([]bool, len(p.starts))
	open := -1
	var oc byte
	var on int
	for k := range p.starts {
		l := p.line(k)
		if len(l) < 3 {
			continue
		}
		c, n, rest, ok := fenceLine(l)
		if !ok || c == '`' && strings.IndexByte(rest, '`') >= 0 {
			continue
		}
		if open < 0 {
			open, oc, on = k, c, n
			continue
		}
		if c == oc && n >= on && trimSpace(rest) == "" {
			for j := open + 1; j <= k; j++ {
				fenced[j] = true
			}
			open = -1
		}
	}
	return fenced
}

// fenceLine matches ^ {0,3}(`{3,}|~{3,})(.*)$ and returns the fence character,
// the length of its run and the rest of the line.
func fenceLine(l string) (c byte, n int, rest string, ok bool) {
	i := 0
	for i < 3 && i < len(l) && l[i] == ' ' {
		i++
	}
	if i >= len(l) || l[i] != '`' && l[i] != '~' {
		return 0, 0, "", false
	}
	c = l[i]
	j := i
	for j < len(l) && l[j] == c {
		j++
	}
	if j-i < 3 {
		return 0, 0, "", false
	}
	return c, j - i, l[j:], true
}

// isHeadingLine matches a canonical heading, ^### DW-[0-9]+: .+ .
func isHeadingLine(l string) bool {
	rest, ok := strings.CutPrefix(l, "### DW-")
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && len(rest) > i+2 && rest[i] == ':' && rest[i+1] == ' '
}

// splitHeading returns a heading line's id and title. The title is the text
// after ": " with trailing whitespace trimmed, except that an all-blank title
// keeps its first character (what the lazy (.+?)\s*$ captures).
func splitHeading(l string) (id, title string) {
	rest := l[len("### "):]
	colon := strings.IndexByte(rest, ':')
	id, rest = rest[:colon], rest[colon+2:]
	title = trimRightSpace(rest)
	if title == "" {
		for _, r := range rest {
			title = string(r)
			break
		}
	}
	return id, title
}

// isATXHeading matches ^ {0,3}#{1,6}(?=[ \t]|$): an ATX heading of any level.
func isATXHeading(l string) bool {
	i := 0
	for i < 3 && i < len(l) && l[i] == ' ' {
		i++
	}
	j := i
	for j < len(l) && l[j] == '#' {
		j++
	}
	if j == i || j-i > 6 {
		return false
	}
	return j == len(l) || l[j] == ' ' || l[j] == '\t'
}

// isFlatBullet matches the flat appender's opening line,
// ^[-*][ \t]+source_spec:[ \t] with the key in any case.
func isFlatBullet(l string) bool {
	if len(l) < 2 || l[0] != '-' && l[0] != '*' {
		return false
	}
	i := skipBlanks(l, 1)
	if i == 1 {
		return false
	}
	n, ok := hasFoldPrefix(l[i:], "source_spec")
	if !ok {
		return false
	}
	i += n
	return len(l) > i+1 && l[i] == ':' && (l[i+1] == ' ' || l[i+1] == '\t')
}
