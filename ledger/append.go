package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/osfile"
)

// This file is the Store's append path. Appending to a ledger of megabytes
// costs, besides the I/O, every pass over its bytes and every copy of them;
// so the path reads the file into a reused buffer, decides on those bytes
// without copying them into a Doc, and adds the entries in the buffer's spare
// room. Whenever that shortcut cannot show it gives the Doc's answer, it
// parses and appends through the Doc instead.

// Append appends one entry per spec (see [Doc.Append]) and returns the minted
// ids, "" where a spec was already filed as an open entry. A missing ledger
// (and its directory) is created. When every spec is already filed, nothing is
// written and no lock is taken, unless a spec asks for CrossSpecDedupe: the
// open twin it matched may be closed by the time of the write, so such a batch
// always decides under the lock.
//
// A spec is identified by its Origin and SourceSpec, the pair that decides
// whether it is already filed: a spec with both empty has no identity (every
// such spec would count as a duplicate of the first and be skipped), so it is
// refused before any I/O with an *[ArgError] wrapping [ErrInvalidArgument].
func (s *Store) Append(ctx context.Context, specs ...Spec) ([]string, error) {
	for i, sp := range specs {
		if sp.Origin == "" && sp.SourceSpec == "" {
			return nil, &ArgError{Op: "Append", Field: "specs[" + strconv.Itoa(i) + "].Origin", Value: "", Err: fmt.Errorf("%w: Origin and SourceSpec are both empty, so the spec has no identity to file it under", ErrInvalidArgument)}
		}
	}
	if err := validateSpecs(specs); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, nil
	}
	var ids []string
	buf := getReadBuffer()
	defer putReadBuffer(buf)
	for _, sp := range specs {
		if sp.CrossSpecDedupe {
			if err := s.makeDir(); err != nil {
				return nil, err
			}
			err := s.appendLocked(ctx, specs, buf, &ids)
			return ids, err
		}
	}
	// The batch can be a no-op only if the file holds every spec's origin:
	// otherwise it writes, and goes to the lock without parsing the probe.
	data, err := s.probeInto(ctx, buf)
	noop := err == nil
	for _, sp := range specs {
		noop = noop && bytes.Contains(data, []byte(oneLine(sp.Origin)))
	}
	if noop {
		if doc, perr := Parse(data); perr == nil {
			if got, aerr := doc.Append(specs...); aerr == nil && !doc.Changed() {
				return got, nil
			} else if aerr == nil {
				ids = got
			}
		}
	}
	if data == nil { // a missing ledger, or a probe that failed: its directory may be missing too
		if err := s.makeDir(); err != nil {
			return nil, err
		}
	}
	err = s.appendLocked(ctx, specs, buf, &ids)
	return ids, err
}

// makeDir creates the ledger's directory if it is missing, as Python's
// appender does (the engine does not), before the lock is taken: a lock file
// placed beside the ledger would otherwise create it 0700.
func (s *Store) makeDir() error {
	dir := filepath.Dir(s.path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o777)
	}
	return nil
}

// probeInto is [Store.probe] reading into buf.
func (s *Store) probeInto(ctx context.Context, buf *[]byte) ([]byte, error) {
	if s.probeFault != nil {
		if err := s.probeFault(); err != nil {
			return nil, err
		}
	}
	data, err := osfile.ReadState(s.path, "Read", *buf, appendSpare)
	if data != nil {
		*buf = data
	}
	return data, err
}

// appendLocked appends specs under the ledger's lock, as Mutate with
// Doc.Append would, reading into buf; *ids gets the minted ids once they are
// decided. It hashes nothing itself, since Append reports no Commit.
func (s *Store) appendLocked(ctx context.Context, specs []Spec, buf *[]byte, ids *[]string) error {
	if s.rootErr != nil {
		return s.noRoot()
	}
	return s.eng.Locked(ctx, func(tx *filetxn.Tx) error {
		// Read into buf, with room for the new entries, rather than with
		// tx.Read's new slice: the lock is held, so these are the bytes the
		// write replaces.
		data, err := osfile.ReadState(s.path, "Read", *buf, appendSpare)
		if err != nil {
			return err
		}
		if data != nil {
			*buf = data
		}
		out, got, ok := appendBytes(data, specs)
		if !ok {
			d, err := Parse(data)
			if err != nil {
				return &fs.PathError{Op: "Decode", Path: s.path, Err: err}
			}
			if got, err = d.Append(specs...); err != nil {
				return err
			}
			out = d.Bytes()
		}
		*ids = got
		if bytes.Equal(out, data) {
			return nil
		}
		_, err = tx.Write(s.path, out)
		return err
	})
}

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
