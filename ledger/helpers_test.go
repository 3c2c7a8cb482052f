package ledger

import (
	"context"
	"encoding/hex"

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
