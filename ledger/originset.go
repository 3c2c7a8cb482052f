package ledger

import (
	"bytes"
	"hash/maphash"
	"strings"
)

// An originSet indexes the origin lines of the front of a text, up to a
// line start: for the key of each line's value, the offset of the first
// origin line with that key, under a hash. The key is the value trimmed of
// blanks and backticks, which every value that the line matches shares
// (fieldValueMatches allows only blanks and one backtick on each side).
//
// It is never changed once built, so Docs on several goroutines share it,
// and it serves any text that agrees with the indexed text up to a line
// start (the limit that a Doc keeps with it): an origin line of that text
// that starts before the limit is a line of the indexed text, so its key is
// in the set at an offset before the limit. Building one costs a scan of
// the text for origin lines, about a dozen searches for an origin's rarest
// byte; a Doc decoded from the kept text builds one, and so does a Doc that
// Append has searched many times (see mayHaveOrigin), so that a Store's
// later appends to the same ledger, and the specs of a large batch, look
// their origin up in it and search only the text after its limit.
type originSet struct {
	seed  maphash.Seed
	first map[uint64]int // hash of a key -> offset of the first origin line with that key
}

// newOriginSet indexes the origin lines of text, which ends at a line start:
// the lines that fieldLinePresent(text, "origin", v) looks at.
func newOriginSet(text []byte) *originSet {
	s := &originSet{seed: maphash.MakeSeed(), first: make(map[uint64]int)}
	key := originKey[1:]
	for at := 0; at < len(text); {
		i := at
		if !bytes.HasPrefix(text[at:], key) {
			j := bytes.Index(text[at:], originKey)
			if j < 0 {
				break
			}
			i = at + j + 1
		}
		rest := text[i+len(key):]
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		h := maphash.Bytes(s.seed, bytes.Trim(rest, originTrim))
		if _, ok := s.first[h]; !ok {
			s.first[h] = i
		}
		at = i + len(key) + len(rest)
	}
	return s
}

// originKey is an origin line's key after the line break before it.
var originKey = []byte("\norigin:")

// originTrim is the cutset of an origin value's key.
const originTrim = " \t`"

// mayHave reports whether an origin line that starts before limit may match
// v: false only when none does. A hash collision answers true.
func (s *originSet) mayHave(v string, limit int) bool {
	off, ok := s.first[maphash.String(s.seed, strings.Trim(v, originTrim))]
	return ok && off < limit
}

// mayHaveOrigin reports whether an origin line of the text may match v
// (false only when none does), as a search of the text for v would, but
// through the Doc's originSet when it has one: a lookup, and a search of
// the text after the set's limit only. A Doc decoded from the codec's kept
// text, or one that Append has searched more than originIndexAfter times,
// builds a set when it has none, or when the text after the limit has
// grown past an eighth of the text.
func (d *Doc) mayHaveOrigin(v string) bool {
	if (d.onKept || d.searched > originIndexAfter) && (d.idx == nil || len(d.text)-d.idxLimit > len(d.text)/8) {
		at := lineStart(d.text)
		d.idx, d.idxLimit = newOriginSet(d.text[:at]), at
	}
	if d.idx == nil {
		return containsRare(d.text, v)
	}
	return d.idx.mayHave(v, d.idxLimit) || containsRare(d.text[d.idxLimit:], v)
}
