package filetxntest

import (
	"bytes"
	"fmt"
	"testing"
)

// codecOf is the method set of filetxn.Codec, as CheckCodec takes it.
type codecOf[D any] interface {
	Decode(data []byte) (D, error)
	Encode(doc D) ([]byte, error)
}

// CodecCases are the inputs [CheckCodec] gives a codec.
type CodecCases[D any] struct {
	// Valid are files the codec must accept and, unchanged, give back byte
	// for byte: include hand-formatted ones, ones with whatever the codec
	// promises to keep (comments, unknown fields), an empty file if the codec
	// takes one.
	Valid [][]byte

	// Invalid are files the codec must refuse.
	Invalid [][]byte

	// IsRefusal, when set, reports whether an error from Decode of an
	// Invalid file is the codec's documented one, for example
	//	func(err error) bool { return errors.As(err, new(*filetxn.FormatError)) }
	// When nil, any error will do.
	IsRefusal func(err error) bool

	// Edit, when set, changes a decoded document (as a transaction would);
	// CheckCodec then checks that the codec reads back what it writes for
	// the edited document of every Valid file and of a missing one.
	Edit func(doc D)
}

// CheckCodec checks codec against the contract of filetxn.Codec and reports
// every violation through t (with Errorf; it does not stop the test):
//
//  1. Decode(nil), the document of a missing file, succeeds, and Encode of
//     that document returns nothing (nil or empty), so that a transaction
//     that changes nothing creates no file.
//  2. Every Valid file decodes, and the unchanged document encodes to
//     exactly the bytes decoded, so that a no-op writes nothing.
//  3. Decode keeps nothing of its input: each Valid file is decoded from a
//     copy that is overwritten once Decode returns, before Encode.
//  4. Round trip: the edited document (with Edit) encodes to bytes that
//     decode again, and the document decoded from them encodes to the same
//     bytes.
//  5. Every Invalid file is refused with an error (one that IsRefusal
//     accepts, when set), and no call panics.
//
// codec is any filetxn.Codec[D] (its method set is spelled out here because
// this package does not import filetxn, so that filetxn's own tests can use
// it). CheckCodec does no I/O and runs in the calling process.
func CheckCodec[D any](t testing.TB, codec interface {
	Decode(data []byte) (D, error)
	Encode(doc D) ([]byte, error)
}, cases CodecCases[D]) {
	t.Helper()
	// 1. The document of a missing file.
	if doc, err := decode(codec, nil); err != nil {
		t.Errorf("Decode(nil) = %v, want the document of a missing file", err)
	} else if out, err := encode(codec, doc); err != nil || len(out) != 0 {
		t.Errorf("Encode(Decode(nil)) = %q, %v; want nothing, nil (a no-op on a missing file creates it)", out, err)
	} else {
		roundTrip(t, codec, cases.Edit, "Decode(nil)", doc)
	}

	for i, want := range cases.Valid {
		name := fmt.Sprintf("Valid[%d]", i)
		// 2 and 3: decode from a copy that is overwritten afterwards.
		in := bytes.Clone(want)
		doc, err := decode(codec, in)
		if err != nil {
			t.Errorf("Decode(%s %q) = %v, want nil", name, clip(want), err)
			continue
		}
		for j := range in {
			in[j] = ^in[j]
		}
		out, err := encode(codec, doc)
		switch {
		case err != nil:
			t.Errorf("Encode(Decode(%s)) = %v, want nil", name, err)
			continue
		case !bytes.Equal(out, want):
			why := "the unchanged document must give back the bytes decoded"
			if len(in) > 0 && bytes.Equal(out, in) {
				why = "Decode kept its input, which was overwritten after it returned"
			}
			t.Errorf("Encode(Decode(%s)) = %q, want %q (%s)", name, clip(out), clip(want), why)
		}
		roundTrip(t, codec, cases.Edit, name, doc)
	}

	// 5. Refusals.
	for i, bad := range cases.Invalid {
		name := fmt.Sprintf("Invalid[%d] %q", i, clip(bad))
		_, err := decode(codec, bytes.Clone(bad))
		switch {
		case err == nil:
			t.Errorf("Decode(%s) = nil error, want a refusal", name)
		case isPanic(err):
			t.Errorf("Decode(%s) %v, want a refusal", name, err)
		case cases.IsRefusal != nil && !cases.IsRefusal(err):
			t.Errorf("Decode(%s) = %v (%T), want the codec's refusal (IsRefusal is false)", name, err, err)
		}
	}
}

// roundTrip is check 4 on doc, from the file called name.
func roundTrip[D any](t testing.TB, codec codecOf[D], edit func(D), name string, doc D) {
	t.Helper()
	if edit == nil {
		return
	}
	if err := try(func() { edit(doc) }); err != nil {
		t.Errorf("Edit(Decode(%s)) %v", name, err)
		return
	}
	out, err := encode(codec, doc)
	if err != nil {
		t.Errorf("Encode(Edit(Decode(%s))) = %v, want nil", name, err)
		return
	}
	again, err := decode(codec, bytes.Clone(out))
	if err != nil {
		t.Errorf("Decode(Encode(Edit(Decode(%s))) %q) = %v, want nil (the codec must read what it writes)", name, clip(out), err)
		return
	}
	if out2, err := encode(codec, again); err != nil || !bytes.Equal(out2, out) {
		t.Errorf("Encode(Decode(%q)) = %q, %v; want the same bytes, nil", clip(out), clip(out2), err)
	}
}

// decode and encode call the codec, turning a panic into an error.
func decode[D any](codec codecOf[D], data []byte) (doc D, err error) {
	if perr := try(func() { doc, err = codec.Decode(data) }); perr != nil {
		return doc, perr
	}
	return doc, err
}

func encode[D any](codec codecOf[D], doc D) (out []byte, err error) {
	if perr := try(func() { out, err = codec.Encode(doc) }); perr != nil {
		return nil, perr
	}
	return out, err
}

// panicError is a panic in a codec's method, caught by try.
type panicError struct{ v any }

func (e panicError) Error() string { return fmt.Sprintf("panicked: %v", e.v) }

func isPanic(err error) bool { _, ok := err.(panicError); return ok }

// try runs fn and returns its panic as a panicError.
func try(fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError{v}
		}
	}()
	fn()
	return nil
}

// clip shortens b for a failure message.
func clip(b []byte) []byte {
	const max = 200
	if len(b) <= max {
		return b
	}
	return append(b[:max:max], "..."...)
}
