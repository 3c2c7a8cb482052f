package board

import (
	"bytes"
	"sync"
)

// Codec decodes and encodes boards for the filetxn engine: it has the shape of
// filetxn.Codec[*Doc]. The zero Codec works; NewCodec adds a cache.
type Codec struct {
	Path  string     // used only in error messages
	cache *lastParse // nil: parse every time

	onDecode func() // tests only: called at the start of every Decode of existing bytes
}

// NewCodec returns a Codec for the board at path that remembers the last board it parsed
// or encoded, so that decoding those exact bytes again (the lock-free probe and then the
// locked read of one transaction, or the next transaction after this process's own
// write) costs a copy instead of a parse. A Codec from NewCodec is safe for concurrent
// use.
func NewCodec(path string) Codec { return Codec{Path: path, cache: &lastParse{}} }

// Decode parses data. A nil data is a missing board: a Doc with no rows that encodes back
// to nil, so the engine writes nothing. A board that does not parse is refused with a
// *ParseError.
func (c Codec) Decode(data []byte) (*Doc, error) {
	if data == nil {
		return Parse(c.Path, nil)
	}
	if c.onDecode != nil {
		c.onDecode()
	}
	if d := c.cache.get(data); d != nil {
		return d, nil
	}
	d, err := Parse(c.Path, data)
	if err != nil {
		return nil, err
	}
	c.cache.put(data, d)
	return d, nil
}

// Encode returns the board's current bytes: the decoded bytes unchanged when no operation
// changed anything, so decode then encode is the identity.
func (c Codec) Encode(d *Doc) ([]byte, error) {
	b := d.Bytes()
	if d.changed {
		c.cache.put(b, d)
	}
	return b, nil
}

// lastParse holds one board's bytes and its Doc. It is sound because a Doc edited by
// Advance is, field for field, the Doc that parsing its bytes would give (the state
// machine test checks this after every action).
type lastParse struct {
	mu  sync.Mutex // protects src and doc
	src []byte
	doc *Doc // pristine: never handed out, only copies of it
}

func (c *lastParse) get(src []byte) *Doc {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.doc == nil || !bytes.Equal(c.src, src) {
		return nil
	}
	return c.doc.clone()
}

func (c *lastParse) put(src []byte, d *Doc) {
	if c == nil {
		return
	}
	d = d.clone()
	d.changed = false
	c.mu.Lock()
	defer c.mu.Unlock()
	c.src = append(c.src[:0:0], src...)
	c.doc = d
}
