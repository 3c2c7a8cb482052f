package board

import (
	"sync"

	"github.com/filetxn/filetxn/internal/seam"
)

// codec decodes and encodes boards for the filetxn engine (a filetxn.Codec[*Doc]).
// The zero codec works; newCodec adds a cache.
type codec struct {
	cache *lastParse // nil: parse every time
}

// newCodec returns a codec that remembers the last two boards it
// parsed or encoded, so that decoding those exact bytes again (the lock-free probe and
// then the locked read of one transaction, or the next transaction after this process's
// own write) costs a copy of a few edits instead of a parse. It keeps copies, never the
// caller's slices. A codec from newCodec is safe for concurrent use.
func newCodec() codec { return codec{cache: &lastParse{}} }

// Decode parses data. A nil data is a missing board: a Doc with no rows that encodes back
// to nil, so the engine writes nothing. A board that does not parse is refused with
// Parse's *filetxn.FormatError.
func (c codec) Decode(data []byte) (*Doc, error) {
	if data == nil {
		return Parse(nil)
	}
	_ = seam.At(seam.BoardDecode, "")
	if d := c.cache.get(data); d != nil {
		return d, nil
	}
	_ = seam.At(seam.BoardParse, "")
	d, err := Parse(data)
	if err != nil {
		return nil, err
	}
	c.cache.put(data, d)
	return d, nil
}

// Encode returns the board's current bytes: the decoded bytes unchanged when no operation
// changed anything, so decode then encode is the identity.
func (c codec) Encode(d *Doc) ([]byte, error) {
	b := d.Bytes()
	if d.changed {
		c.cache.put(b, d)
	}
	return b, nil
}

// lastParse remembers the two boards most recently parsed or encoded, as their Docs: a
// remembered Doc is its own key (hasBytes), so no copy of the bytes is kept beside it.
// Two, because one transaction handles two versions: the probe decodes the old bytes and
// encodes the new ones, then the locked read decodes the old bytes again. It is sound
// because a Doc edited by Advance is, field for field, the Doc that parsing its bytes
// would give (the state machine test checks this after every action): so the Doc
// remembered for some bytes never needs replacing.
type lastParse struct {
	mu   sync.Mutex // protects docs
	docs [2]*Doc    // most recently used first; no pending change; never handed out, only copies
}

// maxCachedEdits bounds the edits a cached Doc carries before put folds them into a copy
// of the parsed board: copies of a cached Doc copy its edits.
const maxCachedEdits = 16

// find returns the Doc of src, moved to the front, or nil.
func (c *lastParse) find(src []byte) *Doc {
	for i, d := range c.docs {
		if d != nil && d.hasBytes(src) {
			c.docs[0], c.docs[i] = d, c.docs[0]
			return d
		}
	}
	return nil
}

func (c *lastParse) get(src []byte) *Doc {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.find(src); d != nil {
		return d.clone()
	}
	return nil
}

// put remembers d as the Doc of src (d.Bytes()), unless src is remembered already.
func (c *lastParse) put(src []byte, d *Doc) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.find(src) != nil {
		return
	}
	if len(d.text) > maxCachedEdits {
		d = d.rebased(string(src))
	} else {
		d = d.clone()
		d.changed = false
	}
	c.docs[1], c.docs[0] = c.docs[0], d
}
