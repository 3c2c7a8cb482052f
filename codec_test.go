package filetxn

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// counter is a document holding one integer, stored as decimal text.
type counter struct{ n int }

type counterCodec struct{}

func (counterCodec) Decode(data []byte) (*counter, error) {
	if data == nil {
		return &counter{}, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("counter: %w", err)
	}
	return &counter{n: n}, nil
}

func (counterCodec) Encode(c *counter) ([]byte, error) {
	if c.n == 0 {
		return nil, nil // the document of a missing file: create nothing
	}
	return []byte(strconv.Itoa(c.n) + "\n"), nil
}

// kv is a map document stored as canonical JSON, used by the state machine.
type kv struct{ m map[string]string }

type kvCodec struct{}

func (kvCodec) Decode(data []byte) (*kv, error) {
	d := &kv{m: map[string]string{}}
	if data == nil {
		return d, nil
	}
	if err := json.Unmarshal(data, &d.m); err != nil {
		return nil, err
	}
	return d, nil
}

func (kvCodec) Encode(d *kv) ([]byte, error) {
	if len(d.m) == 0 {
		return []byte("{}\n"), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(d.m); err != nil { // map keys come out sorted
		return nil, err
	}
	return b.Bytes(), nil
}

// lines keeps a file as its lines; used by the benchmarks.
type lines struct{ ls [][]byte }

type linesCodec struct{}

// Decode keeps sub-slices of data, as the Codec contract allows.
func (linesCodec) Decode(data []byte) (*lines, error) {
	if len(data) == 0 {
		return &lines{}, nil
	}
	return &lines{ls: bytes.SplitAfter(data, []byte("\n"))}, nil
}

func (linesCodec) Encode(d *lines) ([]byte, error) { return bytes.Join(d.ls, nil), nil }

// must returns s, and panics if NewStore refused its arguments: the tests'
// stores are all valid.
func must[D any](s *Store[D], err error) *Store[D] {
	if err != nil {
		panic(err)
	}
	return s
}

// digestOf is the digest that Commit.Digest gives for bytes b.
func digestOf(b []byte) Digest { return sha256.Sum256(b) }

// sum returns c's digest, or the zero Digest when c published nothing.
func sum(c Commit) Digest { d, _ := c.Digest(); return d }

// readOrNil returns the bytes of the file at path, or nil when it is missing.
func readOrNil(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
