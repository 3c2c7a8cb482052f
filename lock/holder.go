package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/filetxn/filetxn/internal/fsys"
)

// Holder says who holds a lock. An exclusive holder writes it into the lock
// file after acquiring and clears it before releasing; ReadHolder reads it.
// The record is bounded: a host name, program name (the base name of the
// holder's os.Args[0]) or purpose too long for it is recorded cut, where a
// character starts, with "…" after it.
type Holder struct {
	PID      int       `json:"pid"`
	Host     string    `json:"host,omitempty"`
	Program  string    `json:"program,omitempty"`
	Purpose  string    `json:"purpose,omitempty"`
	Acquired time.Time `json:"acquired"`
}

// String describes the holder for a person: "pid 4242 (looprunner: tick
// ci-triage) for 12.3s", with "on <host>" when the holder runs on another
// host. A nil Holder is one that left no record.
func (h *Holder) String() string {
	if h == nil {
		return "a holder that left no record (one made WithoutHolder, or a program that writes none, such as bmad-loop)"
	}
	s := fmt.Sprintf("pid %d", h.PID)
	switch {
	case h.Program != "" && h.Purpose != "":
		s += fmt.Sprintf(" (%s: %s)", h.Program, h.Purpose)
	case h.Program != "" || h.Purpose != "":
		s += fmt.Sprintf(" (%s%s)", h.Program, h.Purpose)
	}
	if h.Host != "" && h.Host != hostname() {
		s += " on " + h.Host
	}
	if !h.Acquired.IsZero() {
		s += " for " + readable(time.Since(h.Acquired))
	}
	return s
}

// readable rounds d to the precision a person reads at a glance.
func readable(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// hostname is this machine's name, asked once.
var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// The record layout in the lock file: byte 0 is reserved (Windows locks it,
// and a locked byte cannot be read by others there), the record is one line
// of JSON from offset 1, and an empty line from offset 1 means "no holder".
// A record left by a holder that was killed is overwritten by the next one;
// bytes after the first newline are never read, so a shorter record needs no
// truncate.
const recordOffset = 1

// maxRecord bounds how much ReadHolder reads.
const maxRecord = 4096

// maxRecordName bounds the JSON encoding of the host and program names in
// the holder record. Neither needs to be short: os.Args[0] is whatever the
// parent passed, not necessarily a file name. A name longer than this is
// recorded cut (see appendBounded), so that the record stays within
// maxRecord and leaves room for the purpose.
const maxRecordName = 256

// recordPrefix is the part of this process's record that never changes:
// the reserved byte and the JSON object up to the purpose. Encoding it once
// keeps the holder record cheap enough to write on every acquisition.
var recordPrefix = sync.OnceValue(func() []byte {
	out := strconv.AppendInt([]byte("\n{\"pid\":"), int64(os.Getpid()), 10)
	if h := hostname(); h != "" {
		out = appendBounded(append(out, `,"host":`...), h, maxRecordName)
	}
	// filepath.Base never returns "".
	return appendBounded(append(out, `,"program":`...), filepath.Base(os.Args[0]), maxRecordName)
})

// appendRecord appends the holder record, the reserved byte first, to out.
// The record always fits in the maxRecord bytes ReadHolder reads: a purpose
// that would not is cut (see appendBounded), and so are the host and program
// names (see maxRecordName).
func appendRecord(out []byte, purpose string, now time.Time, nonce string) []byte {
	start := len(out)
	out = append(out, recordPrefix()...)
	if purpose != "" {
		out = append(out, `,"purpose":`...)
		// What follows the purpose: the acquisition time (an RFC 3339 time
		// in UTC takes at most 35 bytes), the hand-over nonce and "}\n".
		after := len(`,"acquired":""`) + 35 + len(`,"handover":""`) + len(nonce) + 2
		out = appendBounded(out, purpose, recordOffset+maxRecord-(len(out)-start)-after)
	}
	out = append(out, `,"acquired":"`...)
	out = now.UTC().AppendFormat(out, time.RFC3339Nano)
	if nonce != "" {
		out = append(append(append(out, `","handover":"`...), nonce...), '"')
	} else {
		out = append(out, '"')
	}
	return append(out, "}\n"...)
}

// appendBounded appends s to out as a JSON string of at most room bytes:
// whole when it fits, else its longest prefix that fits with "…" after it,
// cut where a character starts. JSON's escapes (a control character or "<"
// takes six bytes) make the encoding up to six times as long as s, so the
// cut is found by encoding: a binary search over the prefix's length, which
// a string that fits never pays for.
func appendBounded(out []byte, s string, room int) []byte {
	quote := func(v string) []byte {
		q, err := json.Marshal(v)
		if err != nil {
			panic("lock: encoding holder record: " + err.Error())
		}
		return q
	}
	if q := quote(s); len(q) <= room {
		return append(out, q...)
	}
	const cut = "…"
	prefix := func(n int) string {
		for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n]
	}
	fits := func(n int) bool { return len(quote(prefix(n)+cut)) <= room }
	// A prefix of n bytes encodes to at least n+2 bytes, so none longer
	// than room fits; the whole of s does not fit either.
	n := sort.Search(min(len(s), room)+1, func(n int) bool { return !fits(n) })
	if n == 0 {
		return append(out, `""`...)
	}
	return append(out, quote(prefix(n-1)+cut)...)
}

// clearedRecord is what a releasing holder writes at recordOffset.
var clearedRecord = []byte{'\n'}

// ReadHolder returns the holder record in the lock file at path. It takes no
// lock and does not block: a path that names anything but a regular file (a
// named pipe, a directory, a socket, a device) is refused at once, with an
// *fs.PathError naming it and wrapping atomicfile.ErrNotRegular. It returns
// (nil, nil) when the file holds no record: the lock is free, or its holder
// does not write records (a holder with WithoutHolder, or another program
// such as bmad-loop). A record can outlive its holder when the holder was
// killed; a caller that needs certainty pairs it with TryAcquire.
func ReadHolder(path string) (*Holder, error) {
	f, _, err := fsys.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := readRecord(f)
	if r == nil {
		return nil, err
	}
	return &r.Holder, nil
}

// record is the holder record as written: the Holder, and the nonce of a
// hand-over in progress (see HandOver), which a child checks before it
// borrows the lock.
type record struct {
	Holder
	Handover string `json:"handover,omitempty"`
}

// readRecord reads the holder record in f. A record without a long purpose
// fits in one small read, which a waiter makes each time it finds the lock
// busy; anything else (a long record, an empty file, a read cut short) is
// read again in full.
func readRecord(f *os.File) (*record, error) {
	var small [256]byte
	var line []byte
	if n, err := readOnce(f, small[:], recordOffset); err == nil {
		line = small[:n]
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	} else {
		buf := make([]byte, maxRecord)
		n, err := f.ReadAt(buf, recordOffset)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, &os.PathError{Op: "ReadHolder", Path: f.Name(), Err: err}
		}
		line = buf[:n]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		} else if n == maxRecord {
			return nil, &os.PathError{Op: "ReadHolder", Path: f.Name(), Err: errors.New("holder record too long")}
		}
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, &os.PathError{Op: "ReadHolder", Path: f.Name(), Err: fmt.Errorf("malformed holder record: %w", err)}
	}
	return &r, nil
}
