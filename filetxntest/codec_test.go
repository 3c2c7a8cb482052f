package filetxntest_test

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/filetxntest"
)

// counterCases are counterCodec's inputs for CheckCodec.
var counterCases = filetxntest.CodecCases[*int]{
	Valid:     [][]byte{[]byte("1\n"), []byte("42\n"), []byte("-7\n")},
	Invalid:   [][]byte{[]byte("x\n"), []byte("1"), []byte("\n")},
	IsRefusal: func(err error) bool { return err != nil },
	Edit:      func(n *int) { *n += 3 },
}

// linesCases are linesCodec's inputs for CheckCodec.
var linesCases = filetxntest.CodecCases[*[][]byte]{
	Valid: [][]byte{[]byte("a\nb\n"), []byte("one line\n"), {}},
	Edit:  func(ls *[][]byte) { *ls = append(*ls, []byte("added\n")) },
}

// linesCodec keeps a file as its lines: sub-slices of the bytes Decode was
// given, not copies, which the contract allows.
type linesCodec struct{}

func (linesCodec) Decode(data []byte) (*[][]byte, error) {
	ls := bytes.SplitAfter(data, []byte("\n"))
	if len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return &ls, nil
}

func (linesCodec) Encode(ls *[][]byte) ([]byte, error) { return bytes.Join(*ls, nil), nil }

// reformats writes "n=<n>" however the file was spelled, and reads both
// spellings: the store, not the codec, tells that a document is unchanged.
type reformats struct{}

func (reformats) Decode(data []byte) (*int, error) {
	return counterCodec{}.Decode(bytes.TrimPrefix(data, []byte("n=")))
}

func (reformats) Encode(n *int) ([]byte, error) { return []byte("n=" + strconv.Itoa(*n) + "\n"), nil }

// TestCheckCodecPassesAGoodCodec checks that codecs that keep the contract
// pass: one that copies what it keeps, one that keeps sub-slices of its
// input, and one whose Encode does not give back the file's own spelling.
func TestCheckCodecPassesAGoodCodec(t *testing.T) {
	require.Empty(t, failures(t, func(tb testing.TB) { filetxntest.CheckCodec(tb, counterCodec{}, counterCases) }),
		"CheckCodec(counterCodec) failures")
	require.Empty(t, failures(t, func(tb testing.TB) { filetxntest.CheckCodec(tb, linesCodec{}, linesCases) }),
		"CheckCodec(linesCodec) failures")
	require.Empty(t, failures(t, func(tb testing.TB) { filetxntest.CheckCodec(tb, reformats{}, counterCases) }),
		"CheckCodec(reformats) failures")
}

// The broken codecs below each break one clause of the contract.

// changesInput is linesCodec, except that Decode turns the input's last
// newline into a NUL as it splits it, as an in-place parser might.
type changesInput struct{ linesCodec }

func (changesInput) Decode(data []byte) (*[][]byte, error) {
	ls, _ := linesCodec{}.Decode(bytes.Clone(data))
	if n := len(data); n > 0 {
		data[n-1] = 0
	}
	return ls, nil
}

// keptLinesRewriter is linesCodec as a filetxn.Rewriter, whose documents
// keep sub-slices of their input, which an edit in place then changes: what
// Rewrite is later given is no longer the bytes the document was decoded from.
type keptLinesRewriter struct{ linesCodec }

func (keptLinesRewriter) Rewrite(ls *[][]byte, read []byte) ([]byte, error) {
	return bytes.Join(*ls, nil), nil
}

// reusesOutput encodes into one buffer that it keeps, so the bytes it
// returned change at its next Encode.
type reusesOutput struct {
	counterCodec
	buf *[]byte
}

func (c reusesOutput) Encode(n *int) ([]byte, error) {
	*c.buf = strconv.AppendInt((*c.buf)[:0], int64(*n), 10)
	*c.buf = append(*c.buf, '\n')
	return *c.buf, nil
}

// unstable numbers its encodings, so the unchanged document never encodes
// the same twice.
type unstable struct {
	counterCodec
	calls *int
}

func (c unstable) Encode(n *int) ([]byte, error) {
	*c.calls++
	return []byte(strconv.Itoa(*n) + "\n" + strconv.Itoa(*c.calls) + "\n"), nil
}

// panics refuses bad input with a panic.
type panics struct{ counterCodec }

func (panics) Decode(data []byte) (*int, error) {
	n, err := counterCodec{}.Decode(data)
	if err != nil {
		panic(err)
	}
	return n, nil
}

// readsNothingBack encodes edits in a form its Decode refuses.
type readsNothingBack struct{ counterCodec }

func (readsNothingBack) Encode(n *int) ([]byte, error) {
	if *n > 100 {
		return []byte("lots\n"), nil
	}
	return counterCodec{}.Encode(n)
}

// errNotCounter is the typed refusal that TestCheckCodecCatchesEachBrokenClause
// asks for, which counterCodec does not give.
var errNotCounter = errors.New("not a counter")

// TestCheckCodecCatchesEachBrokenClause checks that each broken codec fails
// CheckCodec with a message that names what it broke. Each case is the
// ablation of one check: without that check its case is red.
func TestCheckCodecCatchesEachBrokenClause(t *testing.T) {
	tests := []struct {
		name  string
		check func(tb testing.TB)
		want  string
	}{
		{"Decode changes its input", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, changesInput{}, linesCases)
		}, "Decode may keep it, not change it"},
		{"a Rewriter's input changed through its document", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, keptLinesRewriter{}, filetxntest.CodecCases[*[][]byte]{
				Valid: [][]byte{[]byte("a\nb\n")},
				Edit:  func(ls *[][]byte) { (*ls)[0][0] = 'X' },
			})
		}, "never change them"},
		{"a document that changes its input in place", func(tb testing.TB) {
			// linesCodec's documents keep sub-slices of their input, as a
			// zero-copy parser's do: an edit in place changes the bytes the
			// store read, and its baseline with them, so a store would see no
			// change and write nothing. Ablation (run): the input check made
			// for Rewriters only, as it was, turns this case red.
			filetxntest.CheckCodec(tb, linesCodec{}, filetxntest.CodecCases[*[][]byte]{
				Valid: [][]byte{[]byte("a\nb\n")},
				Edit:  func(ls *[][]byte) { (*ls)[0][0] = 'X' },
			})
		}, "never change them"},
		{"Encode's bytes change later", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, reusesOutput{buf: new([]byte)}, counterCases)
		}, "which later calls changed"},
		{"unchanged document encodes differently", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, unstable{calls: new(int)}, counterCases)
		}, "or a no-op writes"},
		{"refusal by panic", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, panics{}, counterCases)
		}, "panicked"},
		{"untyped refusal", func(tb testing.TB) {
			c := counterCases
			c.IsRefusal = func(err error) bool { return errors.Is(err, errNotCounter) }
			filetxntest.CheckCodec(tb, counterCodec{}, c)
		}, "want the codec's refusal"},
		{"invalid input accepted", func(tb testing.TB) {
			c := counterCases
			c.Invalid = [][]byte{[]byte("5\n")}
			filetxntest.CheckCodec(tb, counterCodec{}, c)
		}, "want a refusal"},
		{"edit not read back", func(tb testing.TB) {
			c := counterCases
			c.Edit = func(n *int) { *n += 1000 }
			filetxntest.CheckCodec(tb, readsNothingBack{}, c)
		}, "must read what it writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := failures(t, tt.check)
			require.Contains(t, msg, tt.want, "CheckCodec(%s) reported %q, want a failure saying %q", tt.name, msg, tt.want)
		})
	}
}
