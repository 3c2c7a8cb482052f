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

// rewriterOf is the method that filetxn.Rewriter adds to a codec.
type rewriterOf[D any] interface {
	Rewrite(doc D, read []byte) ([]byte, error)
}

// CodecCases are the inputs [CheckCodec] gives a codec.
type CodecCases[D any] struct {
	// Valid are files the codec must accept: include hand-formatted ones,
	// ones with whatever the codec promises to keep (comments, unknown
	// fields), an empty file if the codec takes one.
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
//  1. Decode(nil), the document of a missing file, succeeds.
//  2. Every Valid file decodes, and Decode does not change its input (it
//     may keep it); nor do later calls on the document, nor Edit.
//  3. The unchanged document encodes to the same bytes each time, and
//     those bytes decode to a document that encodes to them again, so that
//     a no-op writes nothing and a failed fn can be undone.
//  4. What Encode returned does not change afterwards, through later calls
//     of the codec on the document or on others.
//  5. Round trip: the edited document (with Edit) encodes to bytes that
//     decode again to a document that encodes to the same bytes.
//  6. Every Invalid file is refused with an error (one that IsRefusal
//     accepts, when set), and no call panics.
//
// A codec with a Rewrite method (a filetxn.Rewriter) is checked through it,
// given the bytes each document was decoded from, as a store calls it.
// codec is any filetxn.Codec[D] (spelled out: this package does not import
// filetxn). CheckCodec does no I/O and runs in the calling process.
func CheckCodec[D any](t testing.TB, codec interface {
	Decode(data []byte) (D, error)
	Encode(doc D) ([]byte, error)
}, cases CodecCases[D]) {
	t.Helper()
	// 1. The document of a missing file.
	if doc, err := decode(codec, nil); err != nil {
		t.Errorf("Decode(nil) = %v, want the document of a missing file", err)
	} else {
		checkDoc(t, codec, cases.Edit, "Decode(nil)", nil, doc)
	}

	for i, want := range cases.Valid {
		name := fmt.Sprintf("Decode(Valid[%d])", i)
		// 2. Decode from a copy, which must be left as it was.
		in := bytes.Clone(want)
		doc, err := decode(codec, in)
		if err != nil {
			t.Errorf("%s %q = %v, want nil", name, clip(want), err)
			continue
		}
		if !bytes.Equal(in, want) {
			t.Errorf("%s changed its input to %q, want it left as %q (Decode may keep it, not change it)", name, clip(in), clip(want))
			continue
		}
		checkDoc(t, codec, cases.Edit, name, in, doc)
		if !bytes.Equal(in, want) {
			t.Errorf("the input of %s became %q after Encode and Edit, want it left as %q (a document may keep the bytes it was decoded from, never change them: the store keeps them too)", name, clip(in), clip(want))
		}
	}

	// 6. Refusals.
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

// checkDoc makes checks 3 to 5 on doc, which Decode returned for read, and
// which name calls.
func checkDoc[D any](t testing.TB, codec codecOf[D], edit func(D), name string, read []byte, doc D) {
	t.Helper()
	// 3. The baseline of a no-op, and the undo of a failed fn.
	out, err := encode(codec, doc, read)
	if err != nil {
		t.Errorf("Encode(%s) = %v, want nil", name, err)
		return
	}
	kept := bytes.Clone(out)
	if again, err := encode(codec, doc, read); err != nil || !bytes.Equal(again, kept) {
		t.Errorf("Encode(%s) = %q, then %q, %v; want the same bytes, nil (or a no-op writes)", name, clip(kept), clip(again), err)
	}
	undo, err := decode(codec, bytes.Clone(kept))
	if err != nil {
		t.Errorf("Decode(Encode(%s) %q) = %v, want nil (the codec must read what it writes)", name, clip(kept), err)
	} else if again, err := encode(codec, undo, kept); err != nil || !bytes.Equal(again, kept) {
		t.Errorf("Encode(Decode(Encode(%s))) = %q, %v; want %q, nil (undoing a failed fn must give back the document)", name, clip(again), err, clip(kept))
	}
	// 5. The edited document.
	if edit != nil {
		roundTrip(t, codec, edit, name, read, doc)
	}
	// 4. What Encode returned first, after all those calls.
	if !bytes.Equal(out, kept) {
		t.Errorf("Encode(%s) returned %q, which later calls changed to %q: the bytes Encode returns are the engine's (it writes them and keeps them)", name, clip(kept), clip(out))
	}
}

// roundTrip is check 5 on doc, which Decode returned for read, and which name
// calls.
func roundTrip[D any](t testing.TB, codec codecOf[D], edit func(D), name string, read []byte, doc D) {
	t.Helper()
	if err := try(func() { edit(doc) }); err != nil {
		t.Errorf("Edit(%s) %v", name, err)
		return
	}
	out, err := encode(codec, doc, read)
	if err != nil {
		t.Errorf("Encode(Edit(%s)) = %v, want nil", name, err)
		return
	}
	again, err := decode(codec, bytes.Clone(out))
	if err != nil {
		t.Errorf("Decode(Encode(Edit(%s)) %q) = %v, want nil (the codec must read what it writes)", name, clip(out), err)
		return
	}
	if out2, err := encode(codec, again, out); err != nil || !bytes.Equal(out2, out) {
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

// encode calls Rewrite with read for a codec that has it.
func encode[D any](codec codecOf[D], doc D, read []byte) (out []byte, err error) {
	r, ok := codec.(rewriterOf[D])
	if perr := try(func() {
		if ok {
			out, err = r.Rewrite(doc, read)
		} else {
			out, err = codec.Encode(doc)
		}
	}); perr != nil {
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
