package ledger

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// codec reads and writes ledger files for the filetxn engine: it satisfies
// filetxn.Codec[*Doc]. Decode keeps the bytes it is given (a Doc starts on
// them, and appends in the room after them), and Encode returns the text
// without a copy. It is safe for concurrent use.
//
// Each Store has its own codec, since it remembers what it knows of the
// text it encoded last (its highest DW-<n> number, the index of its origin
// lines): a store's transactions mostly decode the bytes that the store
// encoded last (the file as the store wrote it, unless another process
// wrote since), and when Decode is given those bytes it takes that
// knowledge instead of working it out again: Decode then costs one
// comparison of the bytes, with no check for CR or invalid UTF-8 (the text
// of a Doc holds neither) and no search for the highest DW-<n> number. A
// file that is the remembered text with more after it (another writer
// appended) costs a check of what was added, and so does one that is, or
// extends, the text that the remembered one was appended to (the encoding
// Doc was a lock-free probe's, whose write never happened). Any other file
// is parsed afresh, except that the lines it shares with the remembered text
// are not checked again. The comparison is what makes this exact: the
// knowledge is taken only for bytes equal to a text that Parse would give
// back unchanged. The remembered text is what Encode returned, which nothing
// writes again; Decode remembers nothing: a lock-free read (a View) may see
// an older version, which must not displace the one written.
type codec struct {
	mu   sync.Mutex
	last kept // guarded by mu
}

// kept is what the codec knows of the text of the Doc it encoded last, and
// of the text that Doc was decoded from, when that is a front of it (its
// text before its appends).
type kept struct {
	text     []byte // the text, as Encode returned it; nil when none
	seq      string // its highest DW-<n> number, when seqValid
	seqValid bool

	n0        int    // the decoded text is text[:n0]; 0 when it is not a front of text
	seq0      string // its highest DW-<n> number, when seq0Valid
	seq0Valid bool

	idx      *originSet // the origin lines of the text's front up to idxLimit, when not nil
	idxLimit int
}

// Decode parses data as [Parse] does, keeping it; nil data (a missing file)
// is an empty ledger. It fails only on bytes that are not valid UTF-8.
func (c *codec) Decode(data []byte) (*Doc, error) {
	c.mu.Lock()
	k := c.last
	c.mu.Unlock()
	if k.text == nil || data == nil {
		return parseKnown(data, 0, true)
	}
	// data starts with the remembered text (the common case: the file as
	// the Store wrote it), or with the text its Doc was decoded from (the
	// Encode was a lock-free probe's, whose write never happened).
	var base int
	var seq string
	var seqValid bool
	switch p := commonPrefix(data, k.text); {
	case p == len(k.text):
		base, seq, seqValid = p, k.seq, k.seqValid
	case k.n0 > 0 && p >= k.n0:
		base, seq, seqValid = k.n0, k.seq0, k.seq0Valid
	default:
		// Another writer changed the file: it is parsed afresh, but the
		// lines it shares with the remembered text need no check, and keep
		// their index of origin lines.
		return k.parseFrom(data, lineStart(k.text[:p]))
	}
	// When data is that text with more after it (another writer appended),
	// and the text ends a line, the rest holds no CR and is valid UTF-8,
	// the file's text is the known one with the rest after it, and no
	// DW-<n> reference straddles the two; otherwise Parse decides, and
	// names the line of an invalid byte.
	rest := data[base:]
	if len(rest) > 0 && (k.text[base-1] != '\n' || bytes.IndexByte(rest, '\r') >= 0 || !utf8.Valid(rest)) {
		return k.parseFrom(data, lineStart(k.text[:base]))
	}
	d := &Doc{seq: seq, seqValid: seqValid, onKept: true}
	d.onStorage(data)
	d.orig = d.text
	if d.seqValid && len(rest) > 0 {
		d.seq = maxSeq(rest, d.seq)
	}
	d.origSeq, d.origSeqValid = d.seq, d.seqValid
	if k.idx != nil {
		d.idx, d.idxLimit = k.idx, min(k.idxLimit, lineStart(k.text[:base]))
	}
	return d, nil
}

// parseFrom parses data, whose first known bytes are lines of the
// remembered text, as Parse does, keeping data and checking only the bytes
// after them; the Doc keeps the remembered index of origin lines for those
// lines.
func (k kept) parseFrom(data []byte, known int) (*Doc, error) {
	d, err := parseKnown(data, known, true)
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
// them: the bytes decoded when nothing changed, and otherwise the text
// itself, whose storage later appends only extend past its end (see
// onStorage), so that a group commit's batch of appends copies no more than
// the entries it adds.
func (c *codec) Encode(d *Doc) ([]byte, error) {
	out, ofText := d.encode()
	if ofText {
		c.keep(d)
	}
	return out, nil
}

// keep remembers what d knows of its text, which Encode returned, for the
// next Decode, unless it is empty (which costs nothing to parse).
func (c *codec) keep(d *Doc) {
	if len(d.text) == 0 {
		return
	}
	k := kept{text: d.text, seq: d.seq, seqValid: d.seqValid, idx: d.idx, idxLimit: d.idxLimit}
	if n := len(d.orig); n > 0 && n <= len(d.text) && &d.orig[0] == &d.text[0] { // the decoded text is a front of the text
		k.n0, k.seq0, k.seq0Valid = n, d.origSeq, d.origSeqValid
	}
	c.mu.Lock()
	c.last = k
	c.mu.Unlock()
}
