package ledger

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
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

// appendSlack is the room a read buffer keeps past the file's bytes, enough
// for a few appended entries without growing.
const appendSlack = 4 << 10

// maxPooledBuffer bounds the read buffers kept for reuse.
const maxPooledBuffer = 64 << 20

// readBuffers holds read buffers between appends: reading a large ledger into
// fresh memory costs several times what reading it into memory already
// touched does, and leaves megabytes of garbage per append.
var readBuffers sync.Pool // of *[]byte

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

// readInto returns the bytes of the file at path, read into *buf (grown, with
// appendSlack bytes to spare, when too small), nil when the file does not
// exist, and a non-nil empty slice for an empty file. Errors are the engine's
// read errors: a *fs.PathError with Op "Read", the path and the cause.
func readInto(path string, buf *[]byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, readError(path, err)
	}
	defer f.Close()
	size := 0
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < maxPooledBuffer*16 {
		size = int(fi.Size())
	}
	b := (*buf)[:0]
	if cap(b) < size+appendSlack {
		b = make([]byte, 0, size+size/64+appendSlack)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			*buf = b
			return nil, readError(path, err)
		}
	}
	*buf = b
	return b, nil
}

func readError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: "Read", Path: path, Err: err}
}
