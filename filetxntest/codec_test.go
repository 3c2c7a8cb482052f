package filetxntest_test

import (
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

// TestCheckCodecPassesAGoodCodec checks that a codec that keeps the contract
// passes.
func TestCheckCodecPassesAGoodCodec(t *testing.T) {
	require.Empty(t, failures(t, func(tb testing.TB) { filetxntest.CheckCodec(tb, counterCodec{}, counterCases) }),
		"CheckCodec(counterCodec) failures")
}

// The broken codecs below each break one clause of the contract.

// keepsInput decodes the counter but keeps the input to give it back,
// without copying it.
type keepsInput struct{}

type kept struct {
	n, was int    // the count, and the count decoded
	raw    []byte // the bytes decoded: the input itself, not a copy
}

func (keepsInput) Decode(data []byte) (*kept, error) {
	n, err := counterCodec{}.Decode(data)
	if err != nil {
		return nil, err
	}
	return &kept{*n, *n, data}, nil
}

func (keepsInput) Encode(k *kept) ([]byte, error) {
	if k.n == k.was {
		return k.raw, nil
	}
	return counterCodec{}.Encode(&k.n)
}

// reformats writes "n=<n>" however the file was spelled: an unchanged
// document is rewritten.
type reformats struct{ counterCodec }

func (reformats) Encode(n *int) ([]byte, error) { return []byte("n=" + strconv.Itoa(*n) + "\n"), nil }

// panics refuses bad input with a panic.
type panics struct{ counterCodec }

func (panics) Decode(data []byte) (*int, error) {
	n, err := counterCodec{}.Decode(data)
	if err != nil {
		panic(err)
	}
	return n, nil
}

// writesZero writes "0\n" for the document of a missing file, so a no-op
// creates the file.
type writesZero struct{ counterCodec }

func (writesZero) Encode(n *int) ([]byte, error) { return []byte(strconv.Itoa(*n) + "\n"), nil }

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
		{"Decode keeps its input", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, keepsInput{}, filetxntest.CodecCases[*kept]{Valid: counterCases.Valid})
		}, "Decode kept its input"},
		{"unchanged document rewritten", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, reformats{}, counterCases)
		}, "must give back the bytes decoded"},
		{"missing file written", func(tb testing.TB) {
			filetxntest.CheckCodec(tb, writesZero{}, counterCases)
		}, "Encode(Decode(nil))"},
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
