package filetxn

import (
	"bytes"
	"io/fs"

	"github.com/filetxn/filetxn/internal/fsys"
)

// decode decodes data, and returns the document with its encoding as
// decoded: the baseline that the encoding after a fn is compared with, to
// tell whether fn changed the document (see Codec).
func (s *Store[D]) decode(data []byte) (doc D, baseline []byte, err error) {
	if doc, err = s.decodeOnly(data); err != nil {
		return doc, nil, err
	}
	baseline, err = s.encode(doc, data)
	return doc, baseline, err
}

// decodeOnly is the codec's Decode, its error naming the file.
func (s *Store[D]) decodeOnly(data []byte) (D, error) {
	doc, err := s.codec.Decode(data)
	if err != nil {
		return doc, &fs.PathError{Op: "Decode", Path: s.path, Err: err}
	}
	return doc, nil
}

// encode is the codec's Encode of doc, or its Rewrite over read (the bytes
// doc was decoded from) for a Rewriter, its error naming the file.
func (s *Store[D]) encode(doc D, read []byte) ([]byte, error) {
	var out []byte
	var err error
	if r, ok := s.codec.(Rewriter[D]); ok {
		out, err = r.Rewrite(doc, read)
	} else {
		out, err = s.codec.Encode(doc)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "Encode", Path: s.path, Err: err}
	}
	return out, nil
}

// readDoc reads the file for Decode, into a slice that the codec may keep
// and append to (see Codec): nil for a missing file, a non-nil empty slice
// for an empty one. The read lands in the store's scratch buffer, which the
// codec never sees. When it holds what a batch of this store published last
// (the common case: nobody else has written since), readDoc returns those
// bytes themselves, which never change, and no copy is made; a batch's read
// (room) gets them with the room after them, which the codec that encoded
// them may have left (a ledger appends there in place). Only a batch gets
// that room, and batches run one at a time, under the lock, once the
// documents of the batch before are done with. Any other bytes are copied
// into a new slice, with room (readRoom).
func (s *Store[D]) readDoc(op string, room bool) ([]byte, error) {
	buf := s.scratch.Swap(nil)
	if buf == nil {
		buf = new([]byte)
	}
	raw, err := fsys.ReadState(s.path, op, (*buf)[:0], 1)
	if cap(raw) > cap(*buf) {
		*buf = raw[:0] // the scratch buffer grew with the file
	}
	defer func() {
		// A buffer much larger than the file is dropped, so that a file
		// that was briefly huge does not pin its size in memory.
		if cap(*buf) <= 2*len(raw)+scratchSlack {
			s.scratch.CompareAndSwap(nil, buf)
		}
	}()
	switch {
	case err != nil || raw == nil:
		return nil, err
	case len(raw) == 0:
		return make([]byte, 0, readRoom-1), nil
	}
	if last := s.last.Load(); last != nil && bytes.Equal(raw, *last) {
		if room {
			return *last, nil
		}
		return (*last)[:len(*last):len(*last)], nil
	}
	// A new array, with only the room cleared (append does not zero what it
	// copies in).
	return append(raw[:len(raw):len(raw)], make([]byte, readRoom-1)...)[:len(raw)], nil
}

// scratchSlack is the room beyond twice the file's size that the scratch
// buffer may keep: a small file's buffer is kept whatever its size.
const scratchSlack = 64 << 10

// published records out, the bytes a batch has just published (renamed into
// place), with their room, for the next readDoc.
func (s *Store[D]) published(out []byte) {
	s.last.Store(&out)
}
