package ledger

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// codec reads and writes ledger files for the filetxn engine: it satisfies
// filetxn.Codec[*Doc]. Each Store has its own, since it remembers the text
// it encoded last (below); it is safe for concurrent use.
//
// A store's transactions mostly decode the bytes that the store encoded
// last (the file as the store wrote it, unless another process wrote
// since), so the codec keeps that text's storage, and when Decode is given
// the same bytes it starts the Doc on that storage instead of a copy:
// Decode then costs one comparison of the bytes, with no check for CR or
// invalid UTF-8 (the text of a Doc holds neither) and no search for the
// highest DW-<n> number when the encoding Doc knew it. An Append then
// writes its entry into the room after the text (see textBuf), and Encode
// returns the text without a copy.
//
// The same comparison serves the other files. One that is the kept text
// with more after it (another writer appended) costs a check of what was
// added, and so does one that is, or extends, the text that the kept one
// was appended to (the kept one was a lock-free probe's, whose write never
// happened). Any other file is parsed afresh, except that the lines it
// shares with the kept text are not checked again. The comparison is what
// makes this exact: a Doc starts on kept storage only for bytes equal to a
// text that Parse gives back unchanged. Decode keeps nothing: a lock-free
// read (a View) may see an older version, which must not displace the one
// written.
type codec struct {
	mu   sync.Mutex
	last kept // guarded by mu
}

// kept is the text of the Doc that the codec encoded last, and the text
// that Doc was decoded from when it is a front of the same storage (its
// text before its appends).
type kept struct {
	buf      *textBuf // nil when none
	n        int      // the text is buf.b[:n]
	seq      string   // its highest DW-<n> number, when seqValid
	seqValid bool

	n0        int    // the decoded text is buf.b[:n0]; 0 when it is not on buf
	seq0      string // its highest DW-<n> number, when seq0Valid
	seq0Valid bool

	idx      *originSet // the origin lines of the text's front up to idxLimit, when not nil
	idxLimit int
}

// Decode parses data as [Parse] does; nil data (a missing file) is an empty
// ledger. It fails only on bytes that are not valid UTF-8, and keeps nothing of
// data.
func (c *codec) Decode(data []byte) (*Doc, error) {
	c.mu.Lock()
	k := c.last
	c.mu.Unlock()
	if k.buf == nil || data == nil {
		return Parse(data)
	}
	// data starts with the kept text (the common case: the file as the
	// Store wrote it), or with the text its Doc was decoded from (the
	// Encode was a lock-free probe's, whose write never happened).
	var base int
	var d *Doc
	switch p := commonPrefix(data, k.buf.b[:k.n]); {
	case p == k.n:
		base = k.n
		d = &Doc{seq: k.seq, seqValid: k.seqValid}
	case k.n0 > 0 && p >= k.n0:
		base = k.n0
		d = &Doc{seq: k.seq0, seqValid: k.seq0Valid}
	default:
		// Another writer changed the file: it is parsed afresh, but the
		// lines it shares with the kept text need no check, and keep their
		// index of origin lines.
		return k.parseFrom(data, lineStart(k.buf.b[:p]))
	}
	text := k.buf.b[:base:base]
	d.orig, d.text, d.buf = text, text, k.buf
	d.origSeq, d.origSeqValid = d.seq, d.seqValid
	d.onKept = true
	if k.idx != nil {
		d.idx, d.idxLimit = k.idx, k.idxLimit
		if d.idxLimit > base {
			d.idxLimit = lineStart(text)
		}
	}
	if len(data) == base {
		return d, nil
	}
	// The file is that text with more after it: another writer appended.
	// When the text ends a line, the rest holds no CR and is valid UTF-8,
	// the file's text is the kept one with the rest appended, and no DW-<n>
	// reference straddles the two (appendText); otherwise Parse decides,
	// and names the line of an invalid byte.
	rest := data[base:]
	if text[base-1] != '\n' || bytes.IndexByte(rest, '\r') >= 0 || !utf8.Valid(rest) {
		return k.parseFrom(data, lineStart(text))
	}
	appendTo(d, rest)
	d.orig = d.text
	d.origSeq, d.origSeqValid = d.seq, d.seqValid
	return d, nil
}

// parseFrom parses data, whose first known bytes are lines of the kept
// text, as Parse does, checking only the bytes after them; the Doc keeps
// the kept index of origin lines for those lines.
func (k kept) parseFrom(data []byte, known int) (*Doc, error) {
	d, err := parseKnown(data, known)
	if err == nil && k.idx != nil {
		d.idx, d.idxLimit = k.idx, min(k.idxLimit, known)
	}
	return d, err
}

// lineStart returns the length of the front of text that ends a line: the
// offset just past its last "\n", or 0.
func lineStart(text []byte) int { return bytes.LastIndexByte(text, '\n') + 1 }

// commonPrefix returns the length of the longest common prefix of a and b,
// at about the speed of bytes.Equal: it compares blocks, and bytes only in
// the last small block.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for _, block := range [...]int{16 << 10, 64, 1} {
		for i+block <= n && bytes.Equal(a[i:i+block], b[i:i+block]) {
			i += block
		}
	}
	return i
}

// Encode returns the ledger's bytes as [Doc.Bytes] does, without copying
// them: the bytes decoded when nothing changed, so that an unchanged ledger
// is never rewritten, and otherwise the text itself, whose storage later
// appends only extend (see textBuf), so that a group commit's batch of
// appends copies no more than the entries it adds.
func (c *codec) Encode(d *Doc) ([]byte, error) {
	out, ofText := d.encode()
	if ofText {
		c.keep(d)
	}
	return out, nil
}

// keep remembers d's text, which Encode returned, for the next Decode,
// unless it is empty (which costs nothing to parse).
func (c *codec) keep(d *Doc) {
	if d.buf == nil || len(d.text) == 0 {
		return
	}
	k := kept{buf: d.buf, n: len(d.text), seq: d.seq, seqValid: d.seqValid, idx: d.idx, idxLimit: d.idxLimit}
	if len(d.orig) > 0 && &d.orig[0] == &d.buf.b[0] { // the decoded text is a front of the storage
		k.n0, k.seq0, k.seq0Valid = len(d.orig), d.origSeq, d.origSeqValid
	}
	c.mu.Lock()
	c.last = k
	c.mu.Unlock()
}
