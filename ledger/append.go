package ledger

import (
	"bytes"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// This file is the Store's append path. Appending to a ledger of megabytes
// costs, besides the I/O, every pass over its bytes and every copy of them;
// so the path reads the file into a reused buffer, decides on those bytes
// without copying them into a Doc, and adds the entries in the buffer's spare
// room. Whenever that shortcut cannot show it gives the Doc's answer, it
// parses and appends through the Doc instead.

// appendBytes appends specs to data, a whole ledger file (nil when missing),
// as Parse, Doc.Append and Doc.Bytes would, and returns the new bytes (in
// data's spare capacity when there is room) and the minted ids. It reports
// false, and leaves data[:len(data)] alone, when only the Doc can answer: the
// bytes hold a CR or invalid UTF-8 (Parse rewrites or refuses them), or a
// spec's origin occurs in the text (an open entry may cover it).
//
// The origin test is the first step of Doc.covered: a text without the origin
// has no origin line for it, so no spec here is skipped and each mints one
// past the highest DW-<n> so far, exactly as Doc.append1 does.
func appendBytes(data []byte, specs []Spec) ([]byte, []string, bool) {
	if bytes.IndexByte(data, '\r') >= 0 || !utf8.Valid(data) {
		return nil, nil, false
	}
	// A read-only view of data: the loop appends past len(data) and never
	// writes the bytes the view covers.
	seq := maxSeq(unsafe.String(unsafe.SliceData(data), len(data)), "")
	out := data
	ids := make([]string, len(specs))
	for i, s := range specs {
		f := specFields(s)
		if f.origin == "" || bytes.Contains(out, []byte(f.origin)) {
			return nil, nil, false
		}
		id := "DW-" + increment(seq)
		e := f.entry(string(out[max(0, len(out)-2):]), id)
		seq = maxSeq(e, seq)
		out = append(out, e...)
		ids[i] = id
	}
	return out, ids, true
}

// maxPooledBuffer bounds the read buffers kept for reuse.
const maxPooledBuffer = 64 << 20

// readBuffers holds read buffers between appends, for the engine's ReadInto:
// reading a large ledger into fresh memory costs several times what reading
// it into memory already touched does, and leaves megabytes of garbage per
// append. The engine leaves at least 4 KiB of room after what it
// reads, enough for a few appended entries without growing.
var readBuffers sync.Pool // of *[]byte

// appendSpare is the room a read for an append leaves after the file's
// bytes (the extra byte is the one that lets the read see the end of the
// file), so that the new entries usually fit in place.
const appendSpare = 4<<10 + 1

func getReadBuffer() *[]byte {
	if p, ok := readBuffers.Get().(*[]byte); ok {
		return p
	}
	return new([]byte)
}

func putReadBuffer(p *[]byte) {
	if cap(*p) <= maxPooledBuffer {
		readBuffers.Put(p)
	}
}
