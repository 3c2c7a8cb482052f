//go:build unix

package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/testkit"
)

// TestReadFileIntoReadsAroundCapacity reads files of sizes around a
// buffer's capacity: a file that fits with the spare room stays in it, one
// that does not is read in full into a new buffer, with the spare room.
func TestReadFileIntoReadsAroundCapacity(t *testing.T) {
	const spare = 100
	dir := t.TempDir()
	bufCap := 4<<10 + spare + 50
	for _, size := range []int{0, 1, bufCap - spare - 1, bufCap - spare, bufCap - 1, bufCap, bufCap + 1, 3*bufCap + 7} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte('a' + i%26)
		}
		path := filepath.Join(dir, fmt.Sprint(size))
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 0, bufCap)
		got, err := ReadFileInto(path, buf, spare)
		if err != nil || !bytes.Equal(got, want) || cap(got)-len(got) < spare-1 {
			t.Errorf("ReadFileInto(%d bytes, cap %d, spare %d) = %d bytes (equal %v) with %d to spare, %v", size, bufCap, spare, len(got), bytes.Equal(got, want), cap(got)-len(got), err)
			continue
		}
		if inBuf := cap(got) > 0 && &got[:1][0] == &buf[:1][0]; inBuf != (size+spare <= bufCap) {
			t.Errorf("ReadFileInto(%d bytes, cap %d, spare %d) read into the caller's buffer: %v", size, bufCap, spare, inBuf)
		}
	}
}

// TestReadFileRefusesNonRegular puts a named pipe (with no writer), a
// directory, a unix socket and a character device at the path: each read
// returns at once an *fs.PathError naming the path and wrapping
// ErrNotRegular. Ablations: opening without O_NONBLOCK hangs on the pipe
// (the guard fails the test); dropping the fstat check reads the directory
// (EISDIR, not ErrNotRegular), the pipe and /dev/null (as empty files).
func TestReadFileRefusesNonRegular(t *testing.T) {
	for name, path := range testkit.Make(t) {
		for _, rf := range []struct {
			name string
			read func(string) ([]byte, error)
		}{
			{"ReadFile", ReadFile},
			{"ReadFileInto", func(p string) ([]byte, error) { return ReadFileInto(p, make([]byte, 0, 64<<10), 4097) }},
		} {
			t.Run(name+"/"+rf.name, func(t *testing.T) {
				err := testkit.Within(t, func() error { _, err := rf.read(path); return err })
				var pe *fs.PathError
				require.ErrorIs(t, err, ErrNotRegular, "%s(%s) = %v, want an error wrapping ErrNotRegular", rf.name, name, err)
				require.True(t, errors.As(err, &pe) && pe.Path == path, "%s(%s) = %v, want an *fs.PathError naming %s", rf.name, name, err, path)
			})
		}
	}
}
