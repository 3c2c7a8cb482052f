//go:build unix

package osfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestReadFileIntoUnsized reads files of sizes around a buffer's capacity
// into a buffer large enough to be read into without an fstat first: a file
// that fits stays in it, one that fills it is read on in full, with the
// spare room. Ablations: dropping the bytes read before sizing (append of
// nothing), or sizing without them, turn it red.
func TestReadFileIntoUnsized(t *testing.T) {
	const spare = 100
	dir := t.TempDir()
	bufCap := minUnsized + spare + 50
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
