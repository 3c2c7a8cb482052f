package board

import (
	"context"
	"errors"

	"github.com/filetxn/filetxn"
)

// refusedRow returns the parts of a refused row's error: the *filetxn.FormatError of a row
// that cannot be rewritten (nil for a refused transition) and the rowError inside it;
// re is nil when err is not a row's refusal.
func refusedRow(err error) (fe *filetxn.FormatError, re *rowError) {
	if !errors.As(err, &re) {
		return nil, nil
	}
	errors.As(err, &fe)
	return fe, re
}

// advancedBytes returns the bytes Doc.Advance makes of the board src: nil when the key is
// absent (or src is nil), src itself when nothing would change, the edited board
// otherwise, with Doc.Advance's errors and Parse's for a board Parse refuses.
func advancedBytes(src []byte, key string, target Status, opts ...AdvanceOption) ([]byte, error) {
	var cfg advanceConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := validate(key, target, cfg); err != nil {
		return nil, err
	}
	d, err := Parse(src)
	if err != nil {
		return nil, err
	}
	st, err := d.advance(key, target, cfg)
	switch {
	case err != nil:
		return nil, err
	case st == "" && !d.has(key):
		return nil, nil
	case !d.changed:
		return src, nil
	}
	return d.Bytes(), nil
}

// statusInBytes returns the status of key in the board src, as Doc.Status reports it.
func statusInBytes(src []byte, key string) (status Status, ok bool, err error) {
	if src == nil {
		return "", false, nil
	}
	d, err := Parse(src)
	if err != nil {
		return "", false, err
	}
	status, ok = d.Status(key)
	return status, ok, nil
}

// storeStatus reads s without the lock and returns the status of key, as Doc.Status does.
func storeStatus(ctx context.Context, s *Store, key string) (Status, bool, error) {
	d, err := s.View(ctx)
	if err != nil {
		return "", false, err
	}
	st, ok := d.Status(key)
	return st, ok, nil
}
