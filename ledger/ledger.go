package ledger

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/filetxn/filetxn"
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
	crRaw   []byte // the bytes parsed when they hold a CR; nil otherwise (they equal orig)
	orig    []byte // the bytes parsed, with CRLF and CR read as LF, capacity clipped; never written
	text    []byte // the current text, LF only, capacity clipped; never written (edits make new text)
	own     []byte // text's storage, its whole capacity, when appends may extend text in place (see onStorage); nil otherwise
	edited  bool   // text was replaced by an edit in the middle, so it may differ from orig at the same length

	str   string // string(text), when strOK: what the parse and the edits read
	strOK bool
	p     *parsed

	seq      string // highest DW-<n> number in text, without leading zeros; "" when none
	seqValid bool

	origSeq      string // highest DW-<n> number in orig, when origSeqValid (for the codec, see kept)
	origSeqValid bool

	searched int // the specs Append has searched this Doc's text for: past originIndexAfter, it keeps an originSet (see mayHaveOrigin)

	onKept   bool       // decoded from bytes equal to the text the codec encoded last: it may build an originSet (see mayHaveOrigin)
	idx      *originSet // the origin lines of text[:idxLimit], when not nil
	idxLimit int        // a line start; text[:idxLimit] is a front of idx's text
}

// onStorage makes text, whose capacity is room to grow, the Doc's text, on
// storage that the Doc alone writes, and only past its text's end: the
// bytes of a text once handed out (by Encode, to the engine, which keeps
// them) never change, and an append fills the room after them in place.
func (d *Doc) onStorage(text []byte) {
	d.own = text[:cap(text)]
	d.text = text[:len(text):len(text)]
}

// room is how much more than an n-byte text a Doc's new storage holds: about
// a sixty-fourth, so that the appends of many transactions (and a batch's)
// fit before the text moves, and a large ledger's storage is not much larger
// than the file.
func room(n int) int { return n/64 + 1024 }

// moreRoom is room for a text that outgrew its storage: an eighth, so that
// a text that keeps growing (a large batch on a small ledger) moves a
// bounded number of times per byte appended.
func moreRoom(n int) int { return n/8 + 1024 }

// Parse reads ledger bytes. Nil data is a missing file and empty data an
// empty one; both are a ledger without entries. CRLF and lone CR are read as
// LF, as Python's universal newlines do. Parse fails only on bytes that are
// not valid UTF-8, with a *[filetxn.FormatError] naming the line and column
// of the first such byte; any text at all is otherwise a ledger, and text
// that is not a canonical entry is kept verbatim as prose. Parse does not
// keep data.
func Parse(data []byte) (*Doc, error) { return parseKnown(data, 0, false) }

// parseKnown is Parse for data whose first known bytes are known to be
// valid UTF-8 without a CR, ending a line (a front of a Doc's text, which
// never holds either): it checks only the bytes after them. When keep, the
// Doc keeps data, and appends in place to the room after it (the codec's
// Decode, given a slice of its own by the engine), unless data holds a CR.
func parseKnown(data []byte, known int, keep bool) (*Doc, error) {
	cr := bytes.IndexByte(data[known:], '\r') >= 0
	var text []byte
	switch {
	case cr:
		text = normalize(data) // the front, without a CR, stays as it is
	case keep:
		text = data
	default:
		text = append(make([]byte, 0, len(data)+room(len(data))), data...)
	}
	if !utf8.Valid(text[known:]) {
		return nil, invalidUTF8(text, known)
	}
	d := &Doc{missing: data == nil}
	d.onStorage(text)
	d.orig = d.text
	if cr {
		d.crRaw = data[:len(data):len(data)]
		if !keep {
			d.crRaw = bytes.Clone(data)
		}
	}
	return d, nil
}

// invalidUTF8 is the error of text whose first invalid UTF-8 byte is at or
// after known.
func invalidUTF8(text []byte, known int) error {
	i := known
	for i < len(text) {
		r, n := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	line := bytes.Count(text[:i], []byte("\n")) + 1
	col := i - bytes.LastIndexByte(text[:i], '\n')
	return &filetxn.FormatError{Line: line, Column: col, Err: errInvalidUTF8}
}

// normalize returns data with CRLF and lone CR read as LF, in new storage
// with room to grow.
func normalize(data []byte) []byte {
	out := make([]byte, 0, len(data)+room(len(data)))
	for {
		i := bytes.IndexByte(data, '\r')
		if i < 0 {
			return append(out, data...)
		}
		out = append(append(out, data[:i]...), '\n')
		data = data[i+1:]
		if len(data) > 0 && data[0] == '\n' {
			data = data[1:]
		}
	}
}

// Bytes returns the ledger's bytes in a new slice: exactly the bytes given to
// [Parse] when the text is unchanged (CRLF line endings included), otherwise
// the current text with LF line endings, which is what bmad-loop writes on
// POSIX. A Doc parsed from nil and never changed returns nil.
func (d *Doc) Bytes() []byte {
	if d == nil {
		return nil
	}
	out, _ := d.encode()
	return bytes.Clone(out)
}

// encode returns the ledger's bytes as Bytes does, without copying them, for
// the engine's codec: the parsed bytes, or the text, whose storage is written
// only past its end (see onStorage). ofText reports that they are the text.
func (d *Doc) encode() (out []byte, ofText bool) {
	switch {
	case d.changed() && d.own != nil:
		// With the room after it: the engine gives it to the Decode of its
		// next batch, which appends there in place, if the file still holds
		// these bytes then.
		return d.own[:len(d.text)], true
	case d.changed():
		return d.text, true
	case d.missing:
		return nil, false
	case d.crRaw != nil:
		return d.crRaw, false
	}
	return d.orig, true
}

// textString returns the text as a string, copying it once per version of
// the text: the parse and the edits read it, Append does not.
func (d *Doc) textString() string {
	if !d.strOK {
		d.str, d.strOK = string(d.text), true
	}
	return d.str
}

// changed reports whether the text differs from the text that was parsed.
func (d *Doc) changed() bool {
	// Until an edit in the middle the text is the parsed text with
	// appends after it, so its length tells.
	return len(d.text) != len(d.orig) || d.edited && !bytes.Equal(d.text, d.orig)
}

// parsed returns the parse of the current text.
func (d *Doc) parsed() *parsed {
	if d.p == nil {
		d.p = parse(d.textString())
	}
	return d.p
}

// setText replaces the text after an edit in the middle.
func (d *Doc) setText(text string) {
	d.replace(append(make([]byte, 0, len(text)+room(len(text))), text...))
	d.str, d.strOK = text, true
}

// replace makes text, new storage with room after it, the Doc's text after
// an edit in the middle.
func (d *Doc) replace(text []byte) {
	d.onStorage(text)
	d.edited = true
	d.onKept, d.idx = false, nil
	d.strOK = false
	d.p = nil
	d.seqValid = false
}

// appendText adds s at the end of the text: in place when the room after
// the text is the Doc's (see onStorage), otherwise in new storage, with room,
// that the Doc then owns. s must begin a new line (the text is empty or ends
// with "\n", or s starts with "\n"), so that no DW-<n> reference can straddle
// the junction and the highest number is updated from s alone.
func (d *Doc) appendText(s string) {
	n, m := len(d.text), len(d.text)+len(s)
	switch {
	case m <= len(d.own):
		copy(d.own[n:m], s)
		d.text = d.own[:m:m]
	case d.own != nil: // the text outgrew its storage
		d.onStorage(append(append(make([]byte, 0, m+moreRoom(m)), d.text...), s...))
	default:
		d.onStorage(append(append(make([]byte, 0, m+room(m)), d.text...), s...))
	}
	if d.seqValid {
		d.seq = maxSeq(d.text[n:], d.seq)
	}
	d.strOK = false
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

// Done reports whether the status's first word is "done". An entry that
// is neither open nor done (no status line, or a status such as "closed"
// or "opne") is malformed: no operation closes, reopens or archives it.
func (e Entry) Done() bool { return firstField(e.Status) == "done" }

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

// Entry returns the first entry with the id, and false when no entry has
// it. The operations refuse an id that several entries carry (a
// *filetxn.FormatError keyed by the id); Entries lists them all.
func (d *Doc) Entry(id string) (Entry, bool) {
	p := d.parsed()
	if e := p.find(id); e != nil {
		return p.export(e), true
	}
	return Entry{}, false
}

// nextID returns the id the next appended entry gets: one past the highest
// DW-<n> anywhere in the text (headings, bodies, prose, fenced examples), or
// DW-1. It is exact for numbers of any size.
func (d *Doc) nextID() string { return "DW-" + increment(d.maxSeq()) }

func (d *Doc) maxSeq() string {
	if !d.seqValid {
		d.seq = maxSeq(d.text, "")
		d.seqValid = true
		if len(d.text) == len(d.orig) && !d.edited {
			d.origSeq, d.origSeqValid = d.seq, true
		}
	}
	return d.seq
}

// maxSeq returns the larger of cur and every number n of a DW-<n> reference
// in s, where the reference stands as a word (\bDW-([0-9]+)\b). Numbers are
// decimal strings without leading zeros ("0" for zero); "" means none.
func maxSeq(s []byte, cur string) string {
	var best []byte // the largest number in s so far, a slice of s
	for i := 0; i < len(s); {
		j := bytes.IndexByte(s[i:], 'D') // faster than bytes.Index's setup, once per DW-<n>
		if j < 0 {
			break
		}
		pos := i + j
		i = pos + 1
		if pos+2 >= len(s) || s[pos+1] != 'W' || s[pos+2] != '-' {
			continue
		}
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
		if num := s[z:k]; len(num) > len(best) || len(num) == len(best) && bytes.Compare(num, best) > 0 {
			best = num
		}
	}
	if len(best) > len(cur) || len(best) == len(cur) && string(best) > cur {
		return string(best)
	}
	return cur
}

// wordBefore reports whether the character that ends s[:i] is a word
// character, decoding a rune only past ASCII.
func wordBefore(s []byte, i int) bool {
	if c := s[i-1]; c < utf8.RuneSelf {
		return isWord(rune(c))
	}
	r, _ := utf8.DecodeLastRune(s[:i])
	return isWord(r)
}

// wordAt reports whether the character that starts s[i:] is a word
// character, decoding a rune only past ASCII.
func wordAt(s []byte, i int) bool {
	if c := s[i]; c < utf8.RuneSelf {
		return isWord(rune(c))
	}
	r, _ := utf8.DecodeRune(s[i:])
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
