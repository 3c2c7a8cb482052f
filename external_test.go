package filetxn_test

import "github.com/filetxn/filetxn"

// must returns s, and panics if NewStore refused its arguments: the tests'
// stores are all valid.
func must[D any](s *filetxn.Store[D], err error) *filetxn.Store[D] {
	if err != nil {
		panic(err)
	}
	return s
}
