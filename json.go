package filetxn

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// JSON returns a codec for a JSON document of type T, for [NewStore]
// (NewStore(path, JSON[Queue]()) is a *Store[*Queue]). The documents are *T,
// so that a transaction's fn can change them in place.
//
//   - A missing or empty file decodes to a pointer to the zero T, and writes
//     nothing while that document is left as it is.
//   - A document that fn leaves as it was publishes nothing, however its file
//     was formatted (by hand, with tabs, keys in any order): the store
//     compares encodings, not the file's bytes (see [Codec]).
//   - A changed document is written as encoding/json marshals it, indented
//     by two spaces, with a final newline, without HTML escaping; a number in
//     an interface value (any) is a json.Number, written back as it was read.
//   - A file that is not JSON, is not JSON for T, or holds a field that T
//     does not have (see [KeepUnknownFields]) is refused with a [*FormatError]
//     naming the line and column and, for a wrong type or an unknown field,
//     the dotted path to it in Key ("jobs.task"); a [Store] wraps it in an
//     [*fs.PathError] naming the file, and never rewrites it.
//
// Each Encode marshals the document once. The codec keeps nothing of the
// documents it decodes, and is safe for concurrent use.
func JSON[T any](opts ...JSONOption) Codec[*T] {
	var o jsonOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.keepUnknown {
		return &jsonKeepCodec[T]{jsonCodec[T]{o: o}}
	}
	return &jsonCodec[T]{o: o}
}

// A JSONOption changes how the [JSON] codec reads documents.
type JSONOption func(*jsonOptions)

type jsonOptions struct {
	keepUnknown bool // keep unknown top-level keys instead of refusing them
}

// KeepUnknownFields makes the [JSON] codec keep the keys of the top-level
// object that T has no field for, instead of refusing the file: they are
// written back with their values when the document changes, after T's own
// fields (their values re-indented, otherwise byte for byte). This suits a
// file that other programs also write, each knowing only its own keys. The
// codec is then a [Rewriter], which finds those keys again in the bytes the
// document was decoded from (a walk of them on each write); its Encode,
// given the document alone, writes T's fields only.
//
// Unknown keys deeper in the document are refused all the same, since there
// is nowhere to keep them. Without this option every unknown key is refused
// (encoding/json would drop it on the next write, losing data): a typo in a
// hand-edited file is reported, not ignored.
func KeepUnknownFields() JSONOption {
	return func(o *jsonOptions) { o.keepUnknown = true }
}

// jsonCodec is the codec JSON returns, without KeepUnknownFields.
type jsonCodec[T any] struct {
	o      jsonOptions
	fields jsonFields // the fields of the struct types within T
}

// jsonKeepCodec is the codec JSON returns with KeepUnknownFields.
type jsonKeepCodec[T any] struct{ jsonCodec[T] }

// jsonKey is one top-level key that T has no field for.
type jsonKey struct {
	name  string          // as written in the file, quotes and escapes included
	value json.RawMessage // its value
}

func (c *jsonCodec[T]) Decode(data []byte) (*T, error) {
	doc := new(T)
	if len(data) == 0 {
		return doc, nil
	}
	if err := unmarshalJSON(data, doc); err != nil {
		return nil, err
	}
	if _, err := c.fields.check(data, reflect.TypeFor[T](), c.o.keepUnknown); err != nil {
		return nil, err
	}
	return doc, nil
}

func (c *jsonCodec[T]) Encode(doc *T) ([]byte, error) { return encodeJSON(doc, nil) }

// Rewrite is Encode with the unknown top-level keys of read, the bytes doc
// was decoded from, after T's fields.
func (c *jsonKeepCodec[T]) Rewrite(doc *T, read []byte) ([]byte, error) {
	var extra []jsonKey
	if len(read) > 0 {
		var err error
		if extra, err = c.fields.check(read, reflect.TypeFor[T](), true); err != nil {
			return nil, err
		}
	}
	return encodeJSON(doc, extra)
}

// encodeJSON is the indented encoding of doc, with the keys of extra after
// its fields, and a final newline.
func encodeJSON[T any](doc *T, extra []jsonKey) ([]byte, error) {
	if doc == nil {
		return nil, errors.New("filetxn: JSON: Encode of a nil document")
	}
	canon, err := compactJSON(doc, extra)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(2 * len(canon))
	if err := json.Indent(&out, canon, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// compactJSON is the compact encoding of doc, without HTML escaping, with
// the keys of extra added at the end of its object.
func compactJSON(doc any, extra []jsonKey) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if len(extra) == 0 {
		return out, nil
	}
	if len(out) < 2 || out[len(out)-1] != '}' {
		return nil, fmt.Errorf("filetxn: JSON: %T does not marshal as an object, which its file's unknown keys need", doc)
	}
	out = out[:len(out)-1]
	for i, k := range extra {
		if i > 0 || len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, k.name...)
		out = append(out, ':')
		var v bytes.Buffer
		if err := json.Compact(&v, k.value); err != nil {
			return nil, err
		}
		out = append(out, v.Bytes()...)
	}
	return append(out, '}'), nil
}

// unmarshalJSON is json.Unmarshal of the one JSON value in data into doc,
// except that a number decoded into an interface is a json.Number, which
// keeps its digits (a float64 would round an integer beyond 2^53, and the
// next write would publish the rounded value). Its errors are *FormatError.
func unmarshalJSON(data []byte, doc any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) { // nothing but white space
			err = io.ErrUnexpectedEOF
		}
		return jsonError(data, err)
	}
	rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")
	if len(rest) > 0 {
		r, _ := utf8.DecodeRune(rest)
		return newJSONError(data, len(data)-len(rest), fmt.Errorf("json: invalid character %q after top-level value", r))
	}
	return nil
}

// jsonError turns an error of json.Unmarshal on data into a *FormatError with
// the line and column of its offset and, for a value of the wrong type, the
// key.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included; an
		// input that ends too soon is at fault just past its end (json has
		// no other sign of that case than its message).
		pos := int(se.Offset) - 1
		if strings.HasPrefix(se.Error(), "unexpected end") {
			pos = len(data)
		}
		return newJSONError(data, pos, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The decoder's word for an input that ends inside its value.
		return newJSONError(data, len(data), errors.New("json: unexpected end of JSON input"))
	case errors.As(err, &te):
		// Offset is just past the value of the wrong type; the position
		// given is the value's first byte, and Field the dotted path of
		// keys to it.
		fe := newJSONError(data, valueStart(data, int(te.Offset)), err)
		fe.Key = te.Field
		return fe
	}
	return newJSONError(data, 0, err)
}

func newJSONError(data []byte, pos int, err error) *FormatError {
	pos = max(0, min(pos, len(data)))
	before := data[:pos]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := pos - bytes.LastIndexByte(before, '\n')
	return &FormatError{Line: line, Column: col, Err: err}
}

// valueStart returns where the JSON token ending at end starts, or end if no
// token ends there.
func valueStart(data []byte, end int) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	prev := 0
	for {
		if _, err := dec.Token(); err != nil {
			return end
		}
		off := int(dec.InputOffset())
		if off == end {
			start := prev
			for start < end && strings.IndexByte(" \t\r\n:,", data[start]) >= 0 {
				start++
			}
			return start
		}
		if off > end {
			return end
		}
		prev = off
	}
}

// check walks the JSON value in data (which json.Unmarshal has accepted
// into a t) and refuses the first object key that t has no field for,
// except, when keep, those of the top-level object, which it returns.
func (f *jsonFields) check(data []byte, t reflect.Type, keep bool) ([]jsonKey, error) {
	w := fieldWalk{fields: f, data: data, dec: json.NewDecoder(bytes.NewReader(data)), keep: keep}
	if err := w.value(t, 0, ""); err != nil {
		return nil, err
	}
	return w.extra, nil
}

// fieldWalk is one walk of jsonFields.check.
type fieldWalk struct {
	fields *jsonFields
	data   []byte
	dec    *json.Decoder
	keep   bool
	extra  []jsonKey
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value walks one value that decodes into a t, at nesting depth, under the
// dotted path of object keys that leads to it ("" at the top, and an array's
// elements share their array's path, as in a json.UnmarshalTypeError).
func (w *fieldWalk) value(t reflect.Type, depth int, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface ||
		reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		// The value is the type's own business: skip it whole.
		var skip json.RawMessage
		return w.dec.Decode(&skip)
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		for w.dec.More() {
			var elem reflect.Type
			if k := t.Kind(); k == reflect.Slice || k == reflect.Array {
				elem = t.Elem()
			}
			if err := w.value(elem, depth+1, path); err != nil {
				return err
			}
		}
		_, err = w.dec.Token()
		return err
	case json.Delim('{'):
		return w.object(t, depth, path)
	}
	return nil
}

// object walks the members of an object that decodes into a t, after its
// opening brace, and its closing brace.
func (w *fieldWalk) object(t reflect.Type, depth int, path string) error {
	var fields map[string]reflect.Type
	if t.Kind() == reflect.Struct {
		fields = w.fields.of(t)
	}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		keyPath := key
		if path != "" {
			keyPath = path + "." + key
		}
		end := int(w.dec.InputOffset())
		var ft reflect.Type
		switch t.Kind() {
		case reflect.Map:
			ft = t.Elem()
		case reflect.Struct:
			var ok bool
			if ft, ok = lookupField(fields, key); !ok {
				start := keyStart(w.data, end)
				if !w.keep || depth > 0 {
					fe := newJSONError(w.data, start, fmt.Errorf("json: unknown field %q", key))
					fe.Key = keyPath
					return fe
				}
				var v json.RawMessage
				if err := w.dec.Decode(&v); err != nil {
					return err
				}
				w.extra = append(w.extra, jsonKey{name: string(w.data[start:end]), value: v})
				continue
			}
		}
		if err := w.value(ft, depth+1, keyPath); err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// keyStart returns where the quoted key ending at end (just past its closing
// quote) starts: at the last quote before it that no backslash escapes.
func keyStart(data []byte, end int) int {
	for i := end - 2; i >= 0; i-- {
		if data[i] != '"' {
			continue
		}
		n := 0
		for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
	}
	return max(end-1, 0)
}

// lookupField finds the field of a JSON object key as encoding/json does: an
// exact match first, then one that differs only in case.
func lookupField(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, key) {
			return t, true
		}
	}
	return nil, false
}

// jsonFields knows the JSON fields of struct types, working each out once.
type jsonFields struct {
	mu    sync.Mutex                               // protects known
	known map[reflect.Type]map[string]reflect.Type // by struct type
}

// of returns the object keys that encoding/json decodes into the struct
// type t, with the type each decodes into: exported fields by name or tag,
// "-" left out, and the fields of embedded structs without a tag name
// promoted (a shallower field winning over a promoted one).
func (f *jsonFields) of(t reflect.Type) map[string]reflect.Type {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fields, ok := f.known[t]; ok {
		return fields
	}
	fields := map[string]reflect.Type{}
	addJSONFields(t, fields, map[reflect.Type]bool{})
	if f.known == nil {
		f.known = map[reflect.Type]map[string]reflect.Type{}
	}
	f.known[t] = fields
	return fields
}

func addJSONFields(t reflect.Type, fields map[string]reflect.Type, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	var embedded []reflect.Type
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if name == "" && ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
			if !sf.IsExported() {
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fields[name] = sf.Type
	}
	for _, et := range embedded {
		promoted := map[string]reflect.Type{}
		addJSONFields(et, promoted, seen)
		for name, ft := range promoted {
			if _, ok := fields[name]; !ok {
				fields[name] = ft
			}
		}
	}
}
