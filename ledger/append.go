package ledger

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Append appends one entry per spec (see [Doc.Append]) and returns the minted
// ids, "" where a spec was already filed as an open entry. A missing ledger
// (and its directory) is created. It is the engine's MutateProbed with
// Doc.Append: one read under the lock when the lock is free, and calls made
// at once on one Store share a write (group commit). When every spec is
// already filed, nothing is written, and if the lock is busy or cannot be
// taken (a read-only state root, a replay) the answer comes from a lock-free
// read, without waiting for or taking the lock. A batch with a spec that asks
// for CrossSpecDedupe always decides under the lock: the open twin it matched
// may be closed by the time of the write.
//
// A spec is identified by its Origin and SourceSpec, the pair that decides
// whether it is already filed: a spec with both empty has no identity (every
// such spec would count as a duplicate of the first and be skipped), so it is
// refused before any I/O with an error wrapping filetxn.ErrInvalidArgument,
// as is a bad status or severity. On an error no ids are returned.
func (s *Store) Append(ctx context.Context, specs ...Spec) ([]string, error) {
	if err := validateSpecs(specs); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, nil
	}
	if err := s.makeDir(); err != nil {
		return nil, err
	}
	var ids []string
	fn := func(d *Doc) (err error) {
		ids, err = d.Append(specs...)
		return err
	}
	var err error
	switch {
	case !slices.ContainsFunc(specs, func(sp Spec) bool { return sp.CrossSpecDedupe }):
		_, err = s.MutateProbed(ctx, fn)
	case s.rootErr != nil:
		err = s.noRoot()
	default:
		_, err = s.eng.Mutate(ctx, fn)
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// makeDir creates the ledger's directory if it is missing, as Python's
// appender does (the engine does not), before the lock is taken: a lock file
// placed beside the ledger would otherwise create it 0700.
func (s *Store) makeDir() error {
	if s.eng.Backend() != nil {
		return nil // a document, not a file
	}
	dir := filepath.Dir(s.path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o777)
	}
	return nil
}

// containsRare is bytes.Contains(s, v), faster when v's first bytes are
// common in s, as an origin's are in a ledger ("code review of spec-..."
// begins most of them): it runs IndexByte for the byte of v that is rarest
// in the first rareSample bytes of s, and compares v at each hit. After more
// hits that fail than about one per 16 bytes searched it hands the rest to
// bytes.Contains, whose worst case is linear.
func containsRare(s []byte, v string) bool {
	if len(v) < 2 || len(s) < 2*rareSample {
		return bytes.Contains(s, []byte(v))
	}
	var counts [256]int32
	for i := range rareSample {
		counts[s[i]]++
	}
	p := 0
	for i := 1; i < len(v); i++ {
		if counts[v[i]] < counts[v[p]] {
			p = i
		}
	}
	c := v[p]
	fails := 0
	for i := p; ; i++ {
		j := bytes.IndexByte(s[i:], c)
		if j < 0 {
			return false
		}
		i += j
		start := i - p
		if start+len(v) > len(s) {
			return false
		}
		if string(s[start:start+len(v)]) == v {
			return true
		}
		if fails++; fails > 64 && fails > i>>4 {
			return bytes.Contains(s[start+1:], []byte(v))
		}
	}
}

// rareSample is how many bytes of a text containsRare counts to tell which
// byte of the value is rare in it.
const rareSample = 4 << 10
