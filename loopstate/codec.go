package loopstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Codec reads and writes .state.loop files for the filetxn engine (it is a
// filetxn.Codec[*Doc]). Decode refuses a document that is not the format or
// breaks an invariant, with a *StateError naming Path and the key or
// invariant; Encode refuses to write a Doc that breaks one. A Doc that was
// decoded and not changed encodes to exactly the bytes it was decoded from,
// whatever their layout; a changed one is written in the canonical layout
// (one top-level key a line, in the format's order, nested objects on one
// line), after the known keys any unknown top-level keys it was read with.
// The zero Codec checks no name and names no path.
type Codec struct {
	Path string // the file, for errors
	Name string // when set, the name the document must have (its directory's)
}

// Decode parses a state file. data must be the whole file; nil (a missing
// file) is refused with an error wrapping ErrNoLoop.
func (c Codec) Decode(data []byte) (*Doc, error) {
	if data == nil {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoLoop, c.Path)
	}
	d, err := decode(data)
	if err == nil {
		err = d.Validate()
	}
	if err == nil && c.Name != "" && d.Name != c.Name {
		err = &StateError{Invariant: InvName, Detail: fmt.Sprintf("name is %q in the directory of %q", d.Name, c.Name), Err: ErrInvariant}
	}
	if err != nil {
		return nil, c.withPath(err)
	}
	d.raw = bytes.Clone(data) // a codec keeps nothing of the caller's slice (filetxn.Codec)
	d.canon = d.appendCanonical(nil)
	return d, nil
}

// Encode returns the bytes of d: the bytes it was decoded from when nothing
// has changed, else its canonical encoding. It returns a *StateError when d
// breaks an invariant (or its name is not c.Name), and then nothing must be
// written.
func (c Codec) Encode(d *Doc) ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, c.withPath(err)
	}
	if c.Name != "" && d.Name != c.Name {
		return nil, c.withPath(&StateError{Invariant: InvName, Detail: fmt.Sprintf("name %q written to the directory of %q", d.Name, c.Name), Err: ErrInvariant})
	}
	out := d.appendCanonical(nil)
	if d.raw != nil && bytes.Equal(out, d.canon) {
		return d.raw, nil
	}
	return out, nil
}

func (c Codec) withPath(err error) error {
	var se *StateError
	if errors.As(err, &se) && se.Path == "" {
		cp := *se
		cp.Path = c.Path
		return &cp
	}
	return err
}

// ---- decoding ----

// obj is a JSON object read with its keys in order and duplicates refused.
// An object has at most a few dozen keys, so they are searched in order.
type obj struct {
	path string // dotted key of the object, "" for the document
	kvs  []kv
}

// kv is one key of an object: the key (unescaped), its raw value, and
// whether a reader asked for it.
type kv struct {
	key  []byte
	val  []byte
	used bool
}

func malformed(key, format string, args ...any) error {
	return &StateError{Key: key, Detail: fmt.Sprintf(format, args...), Err: ErrMalformed}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// checkJSON refuses data that is not one valid JSON value, with the
// standard library's description of the first error.
func checkJSON(path string, data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		err = errors.New("invalid JSON")
	}
	return malformed(path, "not JSON: %v", err)
}

// readObj reads the JSON object raw, which must be valid JSON (checkJSON):
// the scan below relies on it and checks only the shape.
func readObj(path string, raw []byte) (*obj, error) {
	name := path
	if name == "" {
		name = "document"
	}
	sc := scan{b: raw}
	if sc.ws(); sc.peek() != '{' {
		return nil, malformed(path, "%s is not a JSON object", name)
	}
	sc.i++
	size := 8
	if path == "" {
		size = 20
	}
	o := &obj{path: path, kvs: make([]kv, 0, size)}
	if sc.ws(); sc.peek() == '}' {
		return o, nil
	}
	for {
		sc.ws()
		key := unquoteBytes(sc.value())
		sc.ws()
		sc.i++ // ':'
		sc.ws()
		val := sc.value()
		if o.find(string(key)) >= 0 {
			return nil, malformed(join(path, string(key)), "duplicate key")
		}
		o.kvs = append(o.kvs, kv{key: key, val: val})
		sc.ws()
		if sc.i++; raw[sc.i-1] == '}' {
			return o, nil
		}
	}
}

// scan walks valid JSON.
type scan struct {
	b []byte
	i int
}

func (s *scan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// value returns the bytes of the value at s.i and moves past it.
func (s *scan) value() []byte {
	start := s.i
	switch s.peek() {
	case '"':
		s.str()
	case '{', '[':
		for depth := 0; ; {
			switch s.b[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
	default: // a number, true, false or null
		for s.i < len(s.b) && !isDelim(s.b[s.i]) {
			s.i++
		}
	}
	return s.b[start:s.i]
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// str moves past the string at s.i.
func (s *scan) str() {
	for s.i++; s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			s.i++
		}
	}
	s.i++
}

// unquote returns the string a valid JSON string literal stands for.
func unquote(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	json.Unmarshal(v, &s) // v is a valid JSON string
	return s
}

// unquoteBytes is unquote without a copy when there is nothing to unescape.
func unquoteBytes(v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	return []byte(unquote(v))
}

func (o *obj) find(key string) int {
	for i := range o.kvs {
		if string(o.kvs[i].key) == key {
			return i
		}
	}
	return -1
}

// has reports whether the object has key.
func (o *obj) has(key string) bool { return o.find(key) >= 0 }

// get returns the raw value of key, refusing a missing one.
func (o *obj) get(key string) ([]byte, error) {
	i := o.find(key)
	if i < 0 {
		return nil, malformed(join(o.path, key), "missing (every key is always present; an unset value is null)")
	}
	o.kvs[i].used = true
	return o.kvs[i].val, nil
}

// unknown returns the keys that get never asked for.
func (o *obj) unknown() []string {
	var ks []string
	for _, kv := range o.kvs {
		if !kv.used {
			ks = append(ks, string(kv.key))
		}
	}
	return ks
}

// strict refuses keys that were not read.
func (o *obj) strict() error {
	if ks := o.unknown(); len(ks) > 0 {
		return malformed(join(o.path, ks[0]), "unknown key")
	}
	return nil
}

func isNull(v []byte) bool { return string(v) == "null" }

func (o *obj) str(key string, nullable bool) (string, bool, error) {
	v, err := o.get(key)
	if err != nil {
		return "", false, err
	}
	if nullable && isNull(v) {
		return "", false, nil
	}
	if len(v) == 0 || v[0] != '"' {
		return "", false, malformed(join(o.path, key), "want a string%s, got %.40s", orNull(nullable), v)
	}
	s := unquote(v)
	if nullable && s == "" {
		return "", false, malformed(join(o.path, key), "empty string (write null)")
	}
	return s, true, nil
}

func orNull(nullable bool) string {
	if nullable {
		return " or null"
	}
	return ""
}

func (o *obj) int(key string, nullable bool) (*int64, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	if nullable && isNull(v) {
		return nil, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 || v[0] == '-' {
		return nil, malformed(join(o.path, key), "want a non-negative integer%s, got %.40s", orNull(nullable), v)
	}
	return &n, nil
}

func (o *obj) num(key string, nullable bool) (*float64, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	if nullable && isNull(v) {
		return nil, nil
	}
	if len(v) == 0 || v[0] < '0' || v[0] > '9' {
		return nil, malformed(join(o.path, key), "want a non-negative number%s, got %.40s", orNull(nullable), v)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, malformed(join(o.path, key), "want a non-negative number%s, got %.40s", orNull(nullable), v)
	}
	return &f, nil
}

func (o *obj) bool(key string) (bool, error) {
	v, err := o.get(key)
	if err != nil {
		return false, err
	}
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, malformed(join(o.path, key), "want true or false, got %.40s", v)
}

// timeLayout is RFC 3339 in UTC with a Z and whole seconds, the only
// spelling of a timestamp the format allows.
const timeLayout = "2006-01-02T15:04:05Z"

func (o *obj) time(key string, nullable bool) (time.Time, error) {
	s, ok, err := o.str(key, nullable)
	if err != nil || !ok {
		if err != nil {
			err = malformed(join(o.path, key), "want an RFC 3339 UTC timestamp%s", orNull(nullable))
		}
		return time.Time{}, err
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil || t.Format(timeLayout) != s {
		return time.Time{}, malformed(join(o.path, key), "want an RFC 3339 UTC timestamp with seconds and Z (2025-05-01T09:00:00Z), got %q", s)
	}
	return t, nil
}

// sub reads a nested object (or null, when nullable).
func (o *obj) sub(key string, nullable bool) (*obj, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	if nullable && isNull(v) {
		return nil, nil
	}
	if len(v) == 0 || v[0] != '{' {
		return nil, malformed(join(o.path, key), "want an object%s, got %.40s", orNull(nullable), v)
	}
	return readObj(join(o.path, key), v)
}

// decode parses data into a Doc without checking the invariants.
func decode(data []byte) (*Doc, error) {
	if !utf8.Valid(data) {
		return nil, malformed("", "not UTF-8")
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, malformed("", "starts with a byte order mark")
	}
	if err := checkJSON("", data); err != nil {
		return nil, err
	}
	o, err := readObj("", data)
	if err != nil {
		return nil, err
	}
	// The schema first: a document of another major may have other keys.
	sv, err := o.get("schema")
	if err != nil {
		return nil, err
	}
	schema, err := strconv.Atoi(string(sv))
	if err != nil {
		return nil, malformed("schema", "want an integer, got %.40s", sv)
	}
	if schema != SchemaVersion {
		return nil, &StateError{Key: "schema", Detail: fmt.Sprintf("major %d, this reader knows %d", schema, SchemaVersion), Err: ErrSchema}
	}
	d := &Doc{Schema: schema}
	r := reader{o: o}
	d.Name = r.str("name", false)
	d.Template = r.str("template", true)
	d.Status = Status(r.str("status", false))
	d.CreatedAt = r.time("created_at", false)
	d.UpdatedAt = r.time("updated_at", false)
	d.LastTickAt = r.time("last_tick_at", true)
	d.TickCount = r.int("tick_count")
	d.ResumedCount = r.int("resumed_count")
	d.ConsecutiveFailures = r.int("consecutive_failures")
	d.FailuresTotal = r.int("failures_total")
	d.Spent = r.cost("spent")
	if e := r.sub("epoch", false); e != nil {
		er := reader{o: e}
		d.Epoch = Epoch{StartedAt: er.time("started_at", false), Tick: er.int("tick"), Spent: er.cost("spent")}
		r.take(er.done())
	}
	if g := r.sub("gates", false); g != nil {
		d.Gates = r.gates(g)
	}
	if s := r.sub("schedule", false); s != nil {
		sr := reader{o: s}
		d.Schedule = Schedule{Enabled: sr.bool("enabled"), Every: sr.str("every", true)}
		r.take(sr.done())
	}
	if c := r.sub("current_tick", true); c != nil {
		cr := reader{o: c}
		d.CurrentTick = &CurrentTick{N: cr.int("n"), StartedAt: cr.time("started_at", false), PID: int(cr.intMax("pid", math.MaxInt32))}
		if c.has("pid_start") { // absent from files written before it existed
			d.CurrentTick.PIDStart = cr.str("pid_start", true)
		}
		r.take(cr.done())
	}
	if p := r.sub("pause", true); p != nil {
		pr := reader{o: p}
		d.Paused = &Pause{At: pr.time("at", false), By: pr.str("by", false), Reason: pr.str("reason", false)}
		r.take(pr.done())
	}
	if h := r.sub("halt", true); h != nil {
		hr := reader{o: h}
		d.Halted = &Halt{At: hr.time("at", false), Gates: hr.strs("gates"), Reason: hr.str("reason", false), Tick: hr.int("tick")}
		r.take(hr.done())
	}
	if a := r.sub("last_approval", true); a != nil {
		ar := reader{o: a}
		d.LastApproval = &Approval{At: ar.time("at", false), By: ar.str("by", false), Note: ar.str("note", false), Tick: ar.int("tick")}
		r.take(ar.done())
	}
	if r.err != nil {
		return nil, r.err
	}
	for _, k := range o.unknown() {
		d.extra = append(d.extra, field{key: k, val: compact(o.kvs[o.find(k)].val)})
	}
	return d, nil
}

// compact returns a JSON value without insignificant whitespace, so that the
// canonical encoding of an unknown key's value is stable.
func compact(v []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return v // cannot happen: v was decoded as JSON
	}
	return b.Bytes()
}

// reader reads the keys of one object and keeps the first error, so that
// decode reads as a list of fields.
type reader struct {
	o   *obj
	err error
}

func (r *reader) take(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) done() error {
	if r.err != nil {
		return r.err
	}
	return r.o.strict()
}

func (r *reader) str(key string, nullable bool) string {
	s, _, err := r.o.str(key, nullable)
	r.take(err)
	return s
}

func (r *reader) time(key string, nullable bool) time.Time {
	t, err := r.o.time(key, nullable)
	r.take(err)
	return t
}

func (r *reader) int(key string) int64 { return r.intMax(key, math.MaxInt64) }

func (r *reader) intMax(key string, max int64) int64 {
	n, err := r.o.int(key, false)
	r.take(err)
	if n == nil {
		return 0
	}
	if *n > max {
		r.take(malformed(join(r.o.path, key), "%d is out of range", *n))
	}
	return *n
}

func (r *reader) bool(key string) bool {
	b, err := r.o.bool(key)
	r.take(err)
	return b
}

func (r *reader) sub(key string, nullable bool) *obj {
	o, err := r.o.sub(key, nullable)
	r.take(err)
	if r.err != nil {
		return nil
	}
	return o
}

func (r *reader) cost(key string) Cost {
	o := r.sub(key, false)
	if o == nil {
		return Cost{}
	}
	cr := reader{o: o}
	c := Cost{USD: cr.num("usd"), Tokens: cr.int("tokens"), Seconds: cr.num("seconds")}
	r.take(cr.done())
	return c
}

func (r *reader) num(key string) float64 {
	f, err := r.o.num(key, false)
	r.take(err)
	if f == nil {
		return 0
	}
	return *f
}

func (r *reader) strs(key string) []string {
	v, err := r.o.get(key)
	if err != nil {
		r.take(err)
		return nil
	}
	bad := func() []string {
		r.take(malformed(join(r.o.path, key), "want a list of strings, got %.40s", v))
		return nil
	}
	if len(v) == 0 || v[0] != '[' {
		return bad()
	}
	ss := []string{}
	sc := scan{b: v, i: 1}
	if sc.ws(); sc.peek() == ']' {
		return ss
	}
	for {
		sc.ws()
		e := sc.value()
		if e[0] != '"' {
			return bad()
		}
		ss = append(ss, unquote(e))
		sc.ws()
		if sc.i++; v[sc.i-1] == ']' {
			return ss
		}
	}
}

// gates reads the gates object. A threshold key that is absent reads as
// null (the format's own example omits some); an unknown key, a value of the
// wrong type or a negative threshold is refused, so that a misspelt
// threshold can never read as "no gate".
func (r *reader) gates(o *obj) Gates {
	var g Gates
	gr := reader{o: o}
	optInt := func(o *obj, key string) *int64 {
		if !o.has(key) {
			return nil
		}
		n, err := o.int(key, true)
		gr.take(err)
		return n
	}
	optNum := func(o *obj, key string) *float64 {
		if !o.has(key) {
			return nil
		}
		f, err := o.num(key, true)
		gr.take(err)
		return f
	}
	g.MaxTicks = optInt(o, "max_ticks")
	g.MaxConsecutiveFailures = optInt(o, "max_consecutive_failures")
	g.MaxFailuresTotal = optInt(o, "max_failures_total")
	if o.has("budget") {
		if b := gr.sub("budget", true); b != nil {
			br := reader{o: b}
			g.Budget = Budget{USD: optNum(b, "usd"), Tokens: optInt(b, "tokens"), Seconds: optNum(b, "seconds")}
			gr.take(br.done())
		}
	}
	if o.has("expires_at") {
		if t := gr.time("expires_at", true); !t.IsZero() {
			g.ExpiresAt = &t
		}
	}
	g.CheckpointEvery = optInt(o, "checkpoint_every")
	g.TickTimeout = optNum(o, "tick_timeout_s")
	r.take(gr.done())
	if r.err == nil {
		if err := g.Validate(); err != nil {
			r.take(&StateError{Key: "gates", Detail: err.Error(), Err: ErrMalformed})
		}
	}
	return g
}

// ---- encoding ----

// appendCanonical appends the canonical encoding of d.
func (d *Doc) appendCanonical(b []byte) []byte {
	b = append(b, "{\n"...)
	kv := func(key string, last bool, val func([]byte) []byte) {
		b = append(b, `  "`...)
		b = append(b, key...)
		b = append(b, `": `...)
		b = val(b)
		if !last {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	last := len(d.extra) == 0
	kv("schema", false, func(b []byte) []byte { return strconv.AppendInt(b, int64(d.Schema), 10) })
	kv("name", false, func(b []byte) []byte { return appendString(b, d.Name) })
	kv("template", false, func(b []byte) []byte { return appendOptString(b, d.Template) })
	kv("status", false, func(b []byte) []byte { return appendString(b, string(d.Status)) })
	kv("created_at", false, func(b []byte) []byte { return appendTime(b, d.CreatedAt) })
	kv("updated_at", false, func(b []byte) []byte { return appendTime(b, d.UpdatedAt) })
	kv("last_tick_at", false, func(b []byte) []byte { return appendTime(b, d.LastTickAt) })
	kv("tick_count", false, func(b []byte) []byte { return strconv.AppendInt(b, d.TickCount, 10) })
	kv("resumed_count", false, func(b []byte) []byte { return strconv.AppendInt(b, d.ResumedCount, 10) })
	kv("consecutive_failures", false, func(b []byte) []byte { return strconv.AppendInt(b, d.ConsecutiveFailures, 10) })
	kv("failures_total", false, func(b []byte) []byte { return strconv.AppendInt(b, d.FailuresTotal, 10) })
	kv("spent", false, func(b []byte) []byte { return appendCost(b, d.Spent) })
	kv("epoch", false, func(b []byte) []byte {
		e := objWriter{b: b}
		e.key("started_at").b = appendTime(e.b, d.Epoch.StartedAt)
		e.key("tick").b = strconv.AppendInt(e.b, d.Epoch.Tick, 10)
		e.key("spent").b = appendCost(e.b, d.Epoch.Spent)
		return e.end()
	})
	kv("gates", false, func(b []byte) []byte { return appendGates(b, d.Gates) })
	kv("schedule", false, func(b []byte) []byte {
		e := objWriter{b: b}
		e.key("enabled").b = strconv.AppendBool(e.b, d.Schedule.Enabled)
		e.key("every").b = appendOptString(e.b, d.Schedule.Every)
		return e.end()
	})
	kv("current_tick", false, func(b []byte) []byte {
		c := d.CurrentTick
		if c == nil {
			return append(b, "null"...)
		}
		e := objWriter{b: b}
		e.key("n").b = strconv.AppendInt(e.b, c.N, 10)
		e.key("started_at").b = appendTime(e.b, c.StartedAt)
		e.key("pid").b = strconv.AppendInt(e.b, int64(c.PID), 10)
		e.key("pid_start").b = appendOptString(e.b, c.PIDStart)
		return e.end()
	})
	kv("pause", false, func(b []byte) []byte {
		p := d.Paused
		if p == nil {
			return append(b, "null"...)
		}
		e := objWriter{b: b}
		e.key("at").b = appendTime(e.b, p.At)
		e.key("by").b = appendString(e.b, p.By)
		e.key("reason").b = appendString(e.b, p.Reason)
		return e.end()
	})
	kv("halt", false, func(b []byte) []byte {
		h := d.Halted
		if h == nil {
			return append(b, "null"...)
		}
		e := objWriter{b: b}
		e.key("at").b = appendTime(e.b, h.At)
		e.key("gates").b = appendStrings(e.b, h.Gates)
		e.key("reason").b = appendString(e.b, h.Reason)
		e.key("tick").b = strconv.AppendInt(e.b, h.Tick, 10)
		return e.end()
	})
	kv("last_approval", last, func(b []byte) []byte {
		a := d.LastApproval
		if a == nil {
			return append(b, "null"...)
		}
		e := objWriter{b: b}
		e.key("at").b = appendTime(e.b, a.At)
		e.key("by").b = appendString(e.b, a.By)
		e.key("note").b = appendString(e.b, a.Note)
		e.key("tick").b = strconv.AppendInt(e.b, a.Tick, 10)
		return e.end()
	})
	for i, f := range d.extra {
		b = append(b, "  "...)
		b = appendString(b, f.key)
		b = append(b, ": "...)
		b = append(b, f.val...)
		if i < len(d.extra)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// objWriter writes a one-line object with ", " and ": " separators.
type objWriter struct {
	b []byte
	n int
}

func (w *objWriter) key(k string) *objWriter {
	if w.n == 0 {
		w.b = append(w.b, '{')
	} else {
		w.b = append(w.b, ", "...)
	}
	w.n++
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, `": `...)
	return w
}

func (w *objWriter) end() []byte {
	if w.n == 0 {
		return append(w.b, "{}"...)
	}
	return append(w.b, '}')
}

func appendCost(b []byte, c Cost) []byte {
	w := objWriter{b: b}
	w.key("usd").b = appendFloat(w.b, c.USD)
	w.key("tokens").b = strconv.AppendInt(w.b, c.Tokens, 10)
	w.key("seconds").b = appendFloat(w.b, c.Seconds)
	return w.end()
}

func appendGates(b []byte, g Gates) []byte {
	w := objWriter{b: b}
	w.key("max_ticks").b = appendOptInt(w.b, g.MaxTicks)
	w.key("max_consecutive_failures").b = appendOptInt(w.b, g.MaxConsecutiveFailures)
	w.key("max_failures_total").b = appendOptInt(w.b, g.MaxFailuresTotal)
	bw := objWriter{b: w.key("budget").b}
	bw.key("usd").b = appendOptFloat(bw.b, g.Budget.USD)
	bw.key("tokens").b = appendOptInt(bw.b, g.Budget.Tokens)
	bw.key("seconds").b = appendOptFloat(bw.b, g.Budget.Seconds)
	w.b = bw.end()
	if g.ExpiresAt == nil {
		w.key("expires_at").b = append(w.b, "null"...)
	} else {
		w.key("expires_at").b = appendTime(w.b, *g.ExpiresAt)
	}
	w.key("checkpoint_every").b = appendOptInt(w.b, g.CheckpointEvery)
	w.key("tick_timeout_s").b = appendOptFloat(w.b, g.TickTimeout)
	return w.end()
}

func appendOptInt(b []byte, p *int64) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *p, 10)
}

func appendOptFloat(b []byte, p *float64) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return appendFloat(b, *p)
}

// appendFloat writes f as JSON the way Python's json does for the values the
// format holds: the shortest digits that read back as f, with ".0" on a whole
// number (0.0, 5.0, 3110.5), and an exponent only beyond 1e21 or below 1e-6.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...) // Validate refuses these before any encode
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if !bytes.ContainsAny(b[start:], ".e") {
		b = append(b, ".0"...)
	}
	return b
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, timeLayout)
	return append(b, '"')
}

func appendOptString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: UTF-8 kept as is, quotes,
// backslashes and control characters escaped, invalid UTF-8 replaced by
// U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
