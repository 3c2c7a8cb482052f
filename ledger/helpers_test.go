package ledger

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/filetxn/filetxn"
)

func hexString(s string) string { return hex.EncodeToString([]byte(s)) }

// must returns s, and panics if Open refused its arguments: the tests'
// stores are all valid.
func must(s *Store, err error) *Store {
	if err != nil {
		panic(err)
	}
	return s
}

// digest returns the digest of the bytes c published, or the zero Digest.
func digest(c filetxn.Commit) filetxn.Digest { d, _ := c.Digest(); return d }

// archivable is the preview of Store.Archive: the ids it would move, read
// without the lock.
func archivable(ctx context.Context, s *Store, before string) ([]string, error) {
	d, err := s.View(ctx)
	if err != nil {
		return nil, err
	}
	return d.Archivable(before)
}

// openIDs returns the ids of d's open entries, in file order, each once:
// what a caller gets from one loop over Entries.
func openIDs(d *Doc) []string {
	var ids []string
	for _, e := range d.Entries() {
		if e.Open() && !slices.Contains(ids, e.ID) {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// isArg reports whether err refuses op's argument arg with value: it wraps
// filetxn.ErrInvalidArgument and its message names the operation, the
// argument and the value, quoted, in that order.
func isArg(err error, op, arg, value string) bool {
	return errors.Is(err, filetxn.ErrInvalidArgument) &&
		strings.HasPrefix(err.Error(), "ledger: "+op+": "+arg+" "+strconv.Quote(value)+": ")
}

// isDuplicate reports whether err refuses an operation on id because
// several entries carry it: a *filetxn.FormatError keyed by the id.
func isDuplicate(err error, id string) bool {
	var fe *filetxn.FormatError
	return errors.As(err, &fe) && fe.Key == id && errors.As(fe.Err, new(*duplicateIDError))
}

// isInvalidUTF8 reports whether err refuses bytes that are not valid
// UTF-8: a *filetxn.FormatError naming the line (any line when line is 0).
func isInvalidUTF8(err error, line int) bool {
	var fe *filetxn.FormatError
	return errors.As(err, &fe) && errors.Is(fe.Err, errInvalidUTF8) && (line == 0 || fe.Line == line)
}

// duplicate names an id that several entries carry and the 1-based lines of
// their headings.
type duplicate struct {
	ID    string
	Lines []int
}

// duplicates returns every id that two or more entries carry, in order of
// first appearance. A ledger with duplicates is corrupt for those ids:
// operations on them fail with a *filetxn.FormatError keyed by the id until
// the file is fixed by hand.
func (d *Doc) duplicates() []duplicate {
	p := d.parsed()
	var out []duplicate
	for i := range p.entries {
		id := p.entries[i].id
		if idx, ok := p.dups[id]; ok && idx[0] == i {
			out = append(out, duplicate{ID: id, Lines: p.dupLines(id)})
		}
	}
	return out
}

// nextSeq returns the number of nextID, or math.MaxUint64 if it does not
// fit in a uint64.
func (d *Doc) nextSeq() uint64 {
	n, err := strconv.ParseUint(increment(d.maxSeq()), 10, 64)
	if err != nil {
		return math.MaxUint64
	}
	return n
}
