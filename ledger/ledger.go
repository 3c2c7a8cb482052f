package ledger

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Doc is a parsed ledger: the text of one version of the file and its
// entries. Its read methods never change it; its operations (Append, MarkDone,
// MarkOpen, RecordDecision, MarkSeenAgain, ArchiveInto, Merge) edit the text in
// place, touching only the lines they must.
//
// A Doc is a value to be used by one goroutine at a time; it is not safe for
// concurrent use without external synchronization.
type Doc struct {
	missing bool   // parsed from nil: the file does not exist
	crRaw   []byte // a copy of the bytes parsed when they hold a CR; nil otherwise (they equal orig)
	orig    string // the bytes parsed, with CRLF and CR read as LF
	text    string // the current text, LF only
	p       *parsed

	seq      string // highest DW-<n> number in text, without leading zeros; "" when none
	seqValid bool

	grow *strings.Builder // when text is grow's content: appends extend it in amortized O(appended)

	// The bytes of the last encode, for the engine: enc holds encText,
	// the text then, and room after it, so that the next encode of a text
	// that only grew since copies only what was added (see encode).
	enc     []byte
	encText string

	appended bool         // Append has run on this Doc: a later one keeps an index of the origin lines
	origins  *originLines // that index, for the text it holds (see originIndex)
}

// Parse reads ledger bytes. Nil data is a missing file and empty data an
// empty one; both are a ledger without entries. CRLF and lone CR are read as
// LF, as Python's universal newlines do. Parse fails only on bytes that are not
// valid UTF-8, with a *[ParseError] naming the line; any text at all is
// otherwise a ledger, and text that is not a canonical entry is kept verbatim
// as prose. Parse does not keep data.
func Parse(data []byte) (*Doc, error) {
	var text string
	var grow *strings.Builder
	if bytes.IndexByte(data, '\r') < 0 {
		text, grow = textOf(data)
	} else {
		text = normalize(data)
	}
	if !utf8.ValidString(text) {
		i := 0
		for i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return nil, &ParseError{Line: strings.Count(text[:i], "\n") + 1, Err: ErrInvalidUTF8}
	}
	d := &Doc{missing: data == nil, orig: text, text: text, grow: grow}
	if grow == nil {
		d.crRaw = bytes.Clone(data)
	}
	return d, nil
}

// textOf returns data as a string held by a builder with room to grow, so
// that appends to a parsed ledger do not copy it again.
func textOf(data []byte) (string, *strings.Builder) {
	b := new(strings.Builder)
	b.Grow(len(data) + len(data)/64 + 1024)
	b.Write(data)
	return b.String(), b
}

// normalize reads CRLF and lone CR as LF.
func normalize(data []byte) string {
	if bytes.IndexByte(data, '\r') < 0 {
		return string(data)
	}
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// Bytes returns the ledger's bytes in a new slice: exactly the bytes given to
// [Parse] when the text is unchanged (CRLF line endings included), otherwise
// the current text with LF line endings, which is what bmad-loop writes on
// POSIX. A Doc parsed from nil and never changed returns nil.
func (d *Doc) Bytes() []byte {
	switch {
	case d == nil:
		return nil
	case d.text != d.orig:
		return []byte(d.text)
	case d.missing:
		return nil
	case d.crRaw != nil:
		return bytes.Clone(d.crRaw)
	}
	return []byte(d.orig)
}

// encode returns the ledger's bytes as Bytes does, for the engine's codec,
// which may keep them and never writes into them or past their end. Bytes
// must give a caller a slice of its own; encode need not, and so copies
// into a buffer of its own only the text added since its last call, when
// the text only grew since (as a batch of appends makes it grow): the bytes
// it returned before, the front of the same buffer, stay as they were.
func (d *Doc) encode() []byte {
	if d.text == d.orig {
		return d.Bytes()
	}
	// HasPrefix compares lengths, then answers at once when the text still
	// starts where encText does (it grew in place); otherwise it compares
	// the bytes, so a text replaced in the middle is never taken for one
	// that grew.
	if d.enc != nil && strings.HasPrefix(d.text, d.encText) {
		d.enc = append(d.enc, d.text[len(d.encText):]...)
	} else {
		// Room for the appends of a batch, so that the next encodes
		// extend this buffer rather than move it.
		d.enc = append(make([]byte, 0, len(d.text)+len(d.text)/64+1024), d.text...)
	}
	d.encText = d.text
	return d.enc[:len(d.enc):len(d.enc)]
}

// String returns the current text, with LF line endings.
func (d *Doc) String() string { return d.text }

// Changed reports whether the text differs from the text that was parsed.
func (d *Doc) Changed() bool { return d.text != d.orig }

// parsed returns the parse of the current text.
func (d *Doc) parsed() *parsed {
	if d.p == nil {
		d.p = parse(d.text)
	}
	return d.p
}

// setText replaces the text after an edit in the middle.
func (d *Doc) setText(text string) {
	d.text = text
	d.p = nil
	d.seqValid = false
	d.grow = nil
}

// appendText adds s at the end of the text. s must begin a new line (the text
// is empty or ends with "\n", or s starts with "\n"), so that no DW-<n>
// reference can straddle the junction and the highest number is updated from s
// alone.
func (d *Doc) appendText(s string) {
	if d.seqValid {
		d.seq = maxSeq(s, d.seq)
	}
	if d.grow == nil || d.grow.Len() != len(d.text) {
		d.grow = new(strings.Builder)
		d.grow.Grow(len(d.text) + len(d.text)/4 + len(s) + 512)
		d.grow.WriteString(d.text)
	}
	d.grow.WriteString(s)
	d.text = d.grow.String()
	d.p = nil
}

// Entry is one canonical entry of a ledger. Offsets and line numbers refer to
// the Doc's text as it was when the Entry was returned.
type Entry struct {
	ID         string // "DW-<n>", as written in the heading
	Title      string // the heading's title, trailing whitespace trimmed
	Status     string // the first status line's value, trimmed; "" when there is none
	Severity   string // critical, high, medium or low from the first severity field line; "" when none
	Body       string // the entry's text, heading included
	Line       int    // 1-based line of the heading
	statusLine int    // 1-based line of the status line; 0 when there is none
	start, end int    // byte offsets of Body in the text
}

// Open reports whether the status's first word is "open".
func (e Entry) Open() bool { return firstField(e.Status) == "open" }

// Done reports whether the status's first word is "done".
func (e Entry) Done() bool { return firstField(e.Status) == "done" }

// Malformed reports whether the entry is neither open nor done: it has no
// status line, or a status such as "closed", "resolved" or "opne".
func (e Entry) Malformed() bool { return !e.Open() && !e.Done() }

// closeDate returns the date of a status that is exactly "done YYYY-MM-DD"
// with a real date, and "" otherwise.
func (e Entry) closeDate() string {
	f := strings.FieldsFunc(e.Status, isSpace)
	if len(f) == 2 && f[0] == "done" && validDate(f[1]) {
		return f[1]
	}
	return ""
}

func (p *parsed) export(e *entry) Entry {
	x := Entry{
		ID:       e.id,
		Title:    e.title,
		Status:   e.status,
		Severity: p.severity(e),
		Body:     p.body(e),
		Line:     e.line + 1,
		start:    e.start,
		end:      e.end,
	}
	if e.statusLn >= 0 {
		x.statusLine = e.statusLn + 1
	}
	return x
}

// Entries returns every canonical entry, in file order, duplicates included.
func (d *Doc) Entries() []Entry {
	p := d.parsed()
	out := make([]Entry, len(p.entries))
	for i := range p.entries {
		out[i] = p.export(&p.entries[i])
	}
	return out
}

// Entry returns the first entry with the id, the one every operation acts on.
func (d *Doc) Entry(id string) (Entry, bool) {
	p := d.parsed()
	if e := p.find(id); e != nil {
		return p.export(e), true
	}
	return Entry{}, false
}

// OpenIDs returns the ids of the open entries, in file order, each once.
func (d *Doc) OpenIDs() []string {
	p := d.parsed()
	var ids []string
	seen := make(map[string]bool)
	for i := range p.entries {
		e := &p.entries[i]
		if e.open() && !seen[e.id] {
			seen[e.id] = true
			ids = append(ids, e.id)
		}
	}
	return ids
}

// Classification partitions requested ids against one version of a ledger.
// Each list keeps the order of the request.
type Classification struct {
	Open        []string // the entry is open
	AlreadyDone []string // the entry is done
	Unknown     []string // no entry has the id
	Malformed   []string // the entry is neither open nor done
	Duplicates  []string // the ledger carries the id more than once (cuts across the others; each id once)
}

// Classify partitions ids by the state of the first entry with each id, and
// reports the requested ids that several entries carry.
func (d *Doc) Classify(ids ...string) Classification {
	p := d.parsed()
	var c Classification
	for _, id := range ids {
		e := p.find(id)
		switch {
		case e == nil:
			c.Unknown = append(c.Unknown, id)
		case e.open():
			c.Open = append(c.Open, id)
		case e.done():
			c.AlreadyDone = append(c.AlreadyDone, id)
		default:
			c.Malformed = append(c.Malformed, id)
		}
	}
	seen := make(map[string]bool)
	for _, id := range ids {
		if _, dup := p.dups[id]; dup && !seen[id] {
			seen[id] = true
			c.Duplicates = append(c.Duplicates, id)
		}
	}
	return c
}

// duplicate names an id that several entries carry and the 1-based lines of
// their headings.
type duplicate struct {
	ID    string
	Lines []int
}

// duplicates returns every id that two or more entries carry, in order of first
// appearance. A ledger with duplicates is corrupt for those ids: operations on
// them fail with an error matching [ErrDuplicateID] until the file is fixed by hand.
func (d *Doc) duplicates() []duplicate {
	p := d.parsed()
	var out []duplicate
	for i := range p.entries {
		id := p.entries[i].id
		if idx, ok := p.dups[id]; ok && idx[0] == i {
			out = append(out, duplicate{ID: id, Lines: p.dupErr(id).(*duplicateIDError).Lines})
		}
	}
	return out
}

// nextID returns the id the next appended entry gets: one past the highest
// DW-<n> anywhere in the text (headings, bodies, prose, fenced examples), or
// DW-1. It is exact for numbers of any size.
func (d *Doc) nextID() string { return "DW-" + increment(d.maxSeq()) }

// nextSeq returns the number of nextID, or math.MaxUint64 if it does not
// fit in a uint64.
func (d *Doc) nextSeq() uint64 {
	n, err := strconv.ParseUint(increment(d.maxSeq()), 10, 64)
	if err != nil {
		return math.MaxUint64
	}
	return n
}

func (d *Doc) maxSeq() string {
	if !d.seqValid {
		d.seq = maxSeq(d.text, "")
		d.seqValid = true
	}
	return d.seq
}

// maxSeq returns the larger of cur and every number n of a DW-<n> reference
// in s, where the reference stands as a word (\bDW-([0-9]+)\b). Numbers are
// decimal strings without leading zeros ("0" for zero); "" means none.
func maxSeq(s, cur string) string {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "DW-")
		if j < 0 {
			break
		}
		pos := i + j
		i = pos + 3
		if pos > 0 && wordBefore(s, pos) {
			continue
		}
		k := pos + 3
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k == pos+3 {
			continue
		}
		i = k
		if k < len(s) && wordAt(s, k) {
			continue
		}
		z := pos + 3
		for z < k-1 && s[z] == '0' {
			z++
		}
		if num := s[z:k]; len(num) > len(cur) || len(num) == len(cur) && num > cur {
			cur = num
		}
	}
	return cur
}

// wordBefore reports whether the character that ends s[:i] is a word
// character, decoding a rune only past ASCII.
func wordBefore(s string, i int) bool {
	if c := s[i-1]; c < utf8.RuneSelf {
		return isWord(rune(c))
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWord(r)
}

// wordAt reports whether the character that starts s[i:] is a word
// character, decoding a rune only past ASCII.
func wordAt(s string, i int) bool {
	if c := s[i]; c < utf8.RuneSelf {
		return isWord(rune(c))
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isWord(r)
}

// increment returns n+1 for a decimal string n ("" counts as 0).
func increment(n string) string {
	b := []byte(n)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}
