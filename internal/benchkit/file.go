package benchkit

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
)

// ReplaceAbove writes text to the file at path in place of everything
// above its first line that is exactly heading (the part people write,
// which a new run keeps); a file without that line, or none at all, is
// replaced whole. heading is found only after a newline, never on the
// file's first line. The write is not atomic: a crash may leave the file
// torn. The errors are the *fs.PathError of reading or writing path.
func ReplaceAbove(path, heading string, text []byte) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out := append([]byte(nil), text...)
	if i := bytes.Index(old, []byte("\n"+heading+"\n")); i >= 0 {
		out = append(out, old[i+1:]...)
	}
	return os.WriteFile(path, out, 0o644)
}

// ReplaceBetween writes text to the file at path between the first begin
// marker and the first end marker after it, keeping the markers and all
// around them; a file without them gets them, with text between, at its
// end after an empty line, and a missing file is made. The write is not
// atomic: a crash may leave the file torn. The errors are the
// *fs.PathError of reading or writing path.
func ReplaceBetween(path, begin, end string, text []byte) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	block := append(append([]byte(begin+"\n"), text...), end...)
	var out []byte
	i, j := bytes.Index(old, []byte(begin)), -1
	if i >= 0 {
		if k := bytes.Index(old[i:], []byte(end)); k >= 0 {
			j = i + k
		}
	}
	if j >= 0 {
		out = append(append(append(out, old[:i]...), block...), old[j+len(end):]...)
	} else {
		out = append(append(append(out, bytes.TrimRight(old, "\n")...), "\n\n"...), block...)
		out = append(out, '\n')
	}
	return os.WriteFile(path, out, 0o644)
}
