package loopstate

// The hand-written JSON codec that codec.go replaced, kept as the oracle of
// the differential tests (oracle_test.go): every state file it accepted
// decodes to the same Doc with the new codec. It is the old code with its
// names prefixed by "old", and is not used otherwise.

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// ---- decoding ----

// oldObj is a JSON object read with its keys in order and duplicates refused.
// An object has at most a few dozen keys, so they are searched in order.
type oldObj struct {
	path string // dotted key of the object, "" for the document
	kvs  []oldKv
}

// oldKv is one key of an object: the key (unescaped), its raw value, and
// whether a oldReader asked for it.
type oldKv struct {
	key  []byte
	val  []byte
	used bool
}

func oldMalformed(key, format string, args ...any) error {
	return malformed(key, format, args...)
}

func oldJoin(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// oldCheckJSON refuses data that is not one valid JSON value, with the
// standard library's description of the first error.
func oldCheckJSON(path string, data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		err = errors.New("invalid JSON")
	}
	return oldMalformed(path, "not JSON: %v", err)
}

// oldReadObj reads the JSON object raw, which must be valid JSON (oldCheckJSON):
// the oldScan below relies on it and checks only the shape.
func oldReadObj(path string, raw []byte) (*oldObj, error) {
	name := path
	if name == "" {
		name = "document"
	}
	sc := oldScan{b: raw}
	if sc.ws(); sc.peek() != '{' {
		return nil, oldMalformed(path, "%s is not a JSON object", name)
	}
	sc.i++
	size := 8
	if path == "" {
		size = 20
	}
	o := &oldObj{path: path, kvs: make([]oldKv, 0, size)}
	if sc.ws(); sc.peek() == '}' {
		return o, nil
	}
	for {
		sc.ws()
		key := oldUnquoteBytes(sc.value())
		sc.ws()
		sc.i++ // ':'
		sc.ws()
		val := sc.value()
		if o.find(string(key)) >= 0 {
			return nil, oldMalformed(oldJoin(path, string(key)), "duplicate key")
		}
		o.kvs = append(o.kvs, oldKv{key: key, val: val})
		sc.ws()
		if sc.i++; raw[sc.i-1] == '}' {
			return o, nil
		}
	}
}

// oldScan walks valid JSON.
type oldScan struct {
	b []byte
	i int
}

func (s *oldScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *oldScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// value returns the bytes of the value at s.i and moves past it.
func (s *oldScan) value() []byte {
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
		for s.i < len(s.b) && !oldIsDelim(s.b[s.i]) {
			s.i++
		}
	}
	return s.b[start:s.i]
}

func oldIsDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// str moves past the string at s.i.
func (s *oldScan) str() {
	for s.i++; s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			s.i++
		}
	}
	s.i++
}

// oldUnquote returns the string a valid JSON string literal stands for.
func oldUnquote(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	json.Unmarshal(v, &s) // v is a valid JSON string
	return s
}

// oldUnquoteBytes is oldUnquote without a copy when there is nothing to unescape.
func oldUnquoteBytes(v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	return []byte(oldUnquote(v))
}

func (o *oldObj) find(key string) int {
	for i := range o.kvs {
		if string(o.kvs[i].key) == key {
			return i
		}
	}
	return -1
}

// has reports whether the object has key.
func (o *oldObj) has(key string) bool { return o.find(key) >= 0 }

// get returns the raw value of key, refusing a missing one.
func (o *oldObj) get(key string) ([]byte, error) {
	i := o.find(key)
	if i < 0 {
		return nil, oldMalformed(oldJoin(o.path, key), "missing (every key is always present; an unset value is null)")
	}
	o.kvs[i].used = true
	return o.kvs[i].val, nil
}

// unknown returns the keys that get never asked for.
func (o *oldObj) unknown() []string {
	var ks []string
	for _, oldKv := range o.kvs {
		if !oldKv.used {
			ks = append(ks, string(oldKv.key))
		}
	}
	return ks
}

// strict refuses keys that were not read.
func (o *oldObj) strict() error {
	if ks := o.unknown(); len(ks) > 0 {
		return oldMalformed(oldJoin(o.path, ks[0]), "unknown key")
	}
	return nil
}

func oldIsNull(v []byte) bool { return string(v) == "null" }

func (o *oldObj) str(key string, nullable bool) (string, bool, error) {
	v, err := o.get(key)
	if err != nil {
		return "", false, err
	}
	if nullable && oldIsNull(v) {
		return "", false, nil
	}
	if len(v) == 0 || v[0] != '"' {
		return "", false, oldMalformed(oldJoin(o.path, key), "want a string%s, got %.40s", oldOrNull(nullable), v)
	}
	s := oldUnquote(v)
	if nullable && s == "" {
		return "", false, oldMalformed(oldJoin(o.path, key), "empty string (write null)")
	}
	return s, true, nil
}

func oldOrNull(nullable bool) string {
	if nullable {
		return " or null"
	}
	return ""
}

func (o *oldObj) int(key string, nullable bool) (*int64, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	if nullable && oldIsNull(v) {
		return nil, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 || v[0] == '-' {
		return nil, oldMalformed(oldJoin(o.path, key), "want a non-negative integer%s, got %.40s", oldOrNull(nullable), v)
	}
	return &n, nil
}

func (o *oldObj) num(key string, nullable bool) (*float64, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	if nullable && oldIsNull(v) {
		return nil, nil
	}
	if len(v) == 0 || v[0] < '0' || v[0] > '9' {
		return nil, oldMalformed(oldJoin(o.path, key), "want a non-negative number%s, got %.40s", oldOrNull(nullable), v)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, oldMalformed(oldJoin(o.path, key), "want a non-negative number%s, got %.40s", oldOrNull(nullable), v)
	}
	return &f, nil
}

func (o *oldObj) bool(key string) (bool, error) {
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
	return false, oldMalformed(oldJoin(o.path, key), "want true or false, got %.40s", v)
}

// oldTimeLayout is RFC 3339 in UTC with a Z and whole seconds, the only
// spelling of a timestamp the format allows.
const oldTimeLayout = "2006-01-02T15:04:05Z"

func (o *oldObj) time(key string, nullable bool) (time.Time, error) {
	s, ok, err := o.str(key, nullable)
	if err != nil || !ok {
		if err != nil {
			err = oldMalformed(oldJoin(o.path, key), "want an RFC 3339 UTC timestamp%s", oldOrNull(nullable))
		}
		return time.Time{}, err
	}
	t, err := time.Parse(oldTimeLayout, s)
	if err != nil || t.Format(oldTimeLayout) != s {
		return time.Time{}, oldMalformed(oldJoin(o.path, key), "want an RFC 3339 UTC timestamp with seconds and Z (2025-05-01T09:00:00Z), got %q", s)
	}
	return t, nil
}

// sub reads a nested object (or null, when nullable).
func (o *oldObj) sub(key string, nullable bool) (*oldObj, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	if nullable && oldIsNull(v) {
		return nil, nil
	}
	if len(v) == 0 || v[0] != '{' {
		return nil, oldMalformed(oldJoin(o.path, key), "want an object%s, got %.40s", oldOrNull(nullable), v)
	}
	return oldReadObj(oldJoin(o.path, key), v)
}

// oldDecode parses data into a Doc without checking the invariants.
func oldDecode(data []byte) (*Doc, error) {
	if !utf8.Valid(data) {
		return nil, oldMalformed("", "not UTF-8")
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, oldMalformed("", "starts with a byte order mark")
	}
	if err := oldCheckJSON("", data); err != nil {
		return nil, err
	}
	o, err := oldReadObj("", data)
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
		return nil, oldMalformed("schema", "want an integer, got %.40s", sv)
	}
	if schema != schemaVersion {
		return nil, malformed("schema", "major %d, this oldReader knows %d", schema, schemaVersion)
	}
	d := &Doc{schema: schema}
	r := oldReader{o: o}
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
		er := oldReader{o: e}
		d.Epoch = Epoch{StartedAt: er.time("started_at", false), Tick: er.int("tick"), Spent: er.cost("spent")}
		r.take(er.done())
	}
	if g := r.sub("gates", false); g != nil {
		d.Gates = r.gates(g)
	}
	if s := r.sub("schedule", false); s != nil {
		sr := oldReader{o: s}
		d.Schedule = Schedule{Enabled: sr.bool("enabled"), Every: sr.str("every", true)}
		r.take(sr.done())
	}
	if c := r.sub("current_tick", true); c != nil {
		cr := oldReader{o: c}
		d.current = &currentTick{N: cr.int("n"), StartedAt: cr.time("started_at", false), PID: int(cr.intMax("pid", math.MaxInt32))}
		if c.has("pid_start") { // absent from files written before it existed
			d.current.pidStart = cr.str("pid_start", true)
		}
		r.take(cr.done())
	}
	if p := r.sub("pause", true); p != nil {
		pr := oldReader{o: p}
		d.Paused = &Event{At: pr.time("at", false), By: pr.str("by", false), Reason: pr.str("reason", false)}
		r.take(pr.done())
	}
	if h := r.sub("halt", true); h != nil {
		hr := oldReader{o: h}
		d.Halted = &Event{At: hr.time("at", false), Gates: hr.strs("gates"), Reason: hr.str("reason", false), Tick: hr.int("tick")}
		r.take(hr.done())
	}
	if a := r.sub("last_approval", true); a != nil {
		ar := oldReader{o: a}
		d.LastApproval = &Event{At: ar.time("at", false), By: ar.str("by", false), Reason: ar.str("note", false), Tick: ar.int("tick")}
		r.take(ar.done())
	}
	if r.err != nil {
		return nil, r.err
	}
	for _, k := range o.unknown() {
		d.extra = append(d.extra, kv{key: k, val: oldCompact(o.kvs[o.find(k)].val)})
	}
	return d, nil
}

// oldCompact returns a JSON value without insignificant whitespace, so that the
// canonical encoding of an unknown key's value is stable.
func oldCompact(v []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return v // cannot happen: v was decoded as JSON
	}
	return b.Bytes()
}

// oldReader reads the keys of one object and keeps the first error, so that
// oldDecode reads as a list of fields.
type oldReader struct {
	o   *oldObj
	err error
}

func (r *oldReader) take(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *oldReader) done() error {
	if r.err != nil {
		return r.err
	}
	return r.o.strict()
}

func (r *oldReader) str(key string, nullable bool) string {
	s, _, err := r.o.str(key, nullable)
	r.take(err)
	return s
}

func (r *oldReader) time(key string, nullable bool) time.Time {
	t, err := r.o.time(key, nullable)
	r.take(err)
	return t
}

func (r *oldReader) int(key string) int64 { return r.intMax(key, math.MaxInt64) }

func (r *oldReader) intMax(key string, max int64) int64 {
	n, err := r.o.int(key, false)
	r.take(err)
	if n == nil {
		return 0
	}
	if *n > max {
		r.take(oldMalformed(oldJoin(r.o.path, key), "%d is out of range", *n))
	}
	return *n
}

func (r *oldReader) bool(key string) bool {
	b, err := r.o.bool(key)
	r.take(err)
	return b
}

func (r *oldReader) sub(key string, nullable bool) *oldObj {
	o, err := r.o.sub(key, nullable)
	r.take(err)
	if r.err != nil {
		return nil
	}
	return o
}

func (r *oldReader) cost(key string) Cost {
	o := r.sub(key, false)
	if o == nil {
		return Cost{}
	}
	cr := oldReader{o: o}
	c := Cost{USD: cr.num("usd"), Tokens: cr.int("tokens"), Seconds: cr.num("seconds")}
	r.take(cr.done())
	return c
}

func (r *oldReader) num(key string) float64 {
	f, err := r.o.num(key, false)
	r.take(err)
	if f == nil {
		return 0
	}
	return *f
}

func (r *oldReader) strs(key string) []string {
	v, err := r.o.get(key)
	if err != nil {
		r.take(err)
		return nil
	}
	bad := func() []string {
		r.take(oldMalformed(oldJoin(r.o.path, key), "want a list of strings, got %.40s", v))
		return nil
	}
	if len(v) == 0 || v[0] != '[' {
		return bad()
	}
	ss := []string{}
	sc := oldScan{b: v, i: 1}
	if sc.ws(); sc.peek() == ']' {
		return ss
	}
	for {
		sc.ws()
		e := sc.value()
		if e[0] != '"' {
			return bad()
		}
		ss = append(ss, oldUnquote(e))
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
func (r *oldReader) gates(o *oldObj) Gates {
	var g Gates
	gr := oldReader{o: o}
	optInt := func(o *oldObj, key string) *int64 {
		if !o.has(key) {
			return nil
		}
		n, err := o.int(key, true)
		gr.take(err)
		return n
	}
	optNum := func(o *oldObj, key string) *float64 {
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
			br := oldReader{o: b}
			g.BudgetUSD, g.BudgetTokens, g.BudgetSeconds = optNum(b, "usd"), optInt(b, "tokens"), optNum(b, "seconds")
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
		if err := g.validate(); err != nil {
			r.take(err)
		}
	}
	return g
}

// ---- encoding ----

// oldCanonical appends the canonical encoding of d.
func oldCanonical(d *Doc, b []byte) []byte {
	b = append(b, "{\n"...)
	oldKv := func(key string, last bool, val func([]byte) []byte) {
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
	oldKv("schema", false, func(b []byte) []byte { return strconv.AppendInt(b, int64(d.schema), 10) })
	oldKv("name", false, func(b []byte) []byte { return oldAppendString(b, d.Name) })
	oldKv("template", false, func(b []byte) []byte { return oldAppendOptString(b, d.Template) })
	oldKv("status", false, func(b []byte) []byte { return oldAppendString(b, string(d.Status)) })
	oldKv("created_at", false, func(b []byte) []byte { return oldAppendTime(b, d.CreatedAt) })
	oldKv("updated_at", false, func(b []byte) []byte { return oldAppendTime(b, d.UpdatedAt) })
	oldKv("last_tick_at", false, func(b []byte) []byte { return oldAppendTime(b, d.LastTickAt) })
	oldKv("tick_count", false, func(b []byte) []byte { return strconv.AppendInt(b, d.TickCount, 10) })
	oldKv("resumed_count", false, func(b []byte) []byte { return strconv.AppendInt(b, d.ResumedCount, 10) })
	oldKv("consecutive_failures", false, func(b []byte) []byte { return strconv.AppendInt(b, d.ConsecutiveFailures, 10) })
	oldKv("failures_total", false, func(b []byte) []byte { return strconv.AppendInt(b, d.FailuresTotal, 10) })
	oldKv("spent", false, func(b []byte) []byte { return oldAppendCost(b, d.Spent) })
	oldKv("epoch", false, func(b []byte) []byte {
		e := oldObjWriter{b: b}
		e.key("started_at").b = oldAppendTime(e.b, d.Epoch.StartedAt)
		e.key("tick").b = strconv.AppendInt(e.b, d.Epoch.Tick, 10)
		e.key("spent").b = oldAppendCost(e.b, d.Epoch.Spent)
		return e.end()
	})
	oldKv("gates", false, func(b []byte) []byte { return oldAppendGates(b, d.Gates) })
	oldKv("schedule", false, func(b []byte) []byte {
		e := oldObjWriter{b: b}
		e.key("enabled").b = strconv.AppendBool(e.b, d.Schedule.Enabled)
		e.key("every").b = oldAppendOptString(e.b, d.Schedule.Every)
		return e.end()
	})
	oldKv("current_tick", false, func(b []byte) []byte {
		c := d.current
		if c == nil {
			return append(b, "null"...)
		}
		e := oldObjWriter{b: b}
		e.key("n").b = strconv.AppendInt(e.b, c.N, 10)
		e.key("started_at").b = oldAppendTime(e.b, c.StartedAt)
		e.key("pid").b = strconv.AppendInt(e.b, int64(c.PID), 10)
		e.key("pid_start").b = oldAppendOptString(e.b, c.pidStart)
		return e.end()
	})
	oldKv("pause", false, func(b []byte) []byte {
		p := d.Paused
		if p == nil {
			return append(b, "null"...)
		}
		e := oldObjWriter{b: b}
		e.key("at").b = oldAppendTime(e.b, p.At)
		e.key("by").b = oldAppendString(e.b, p.By)
		e.key("reason").b = oldAppendString(e.b, p.Reason)
		return e.end()
	})
	oldKv("halt", false, func(b []byte) []byte {
		h := d.Halted
		if h == nil {
			return append(b, "null"...)
		}
		e := oldObjWriter{b: b}
		e.key("at").b = oldAppendTime(e.b, h.At)
		e.key("gates").b = oldAppendStrings(e.b, h.Gates)
		e.key("reason").b = oldAppendString(e.b, h.Reason)
		e.key("tick").b = strconv.AppendInt(e.b, h.Tick, 10)
		return e.end()
	})
	oldKv("last_approval", last, func(b []byte) []byte {
		a := d.LastApproval
		if a == nil {
			return append(b, "null"...)
		}
		e := oldObjWriter{b: b}
		e.key("at").b = oldAppendTime(e.b, a.At)
		e.key("by").b = oldAppendString(e.b, a.By)
		e.key("note").b = oldAppendString(e.b, a.Reason)
		e.key("tick").b = strconv.AppendInt(e.b, a.Tick, 10)
		return e.end()
	})
	for i, f := range d.extra {
		b = append(b, "  "...)
		b = oldAppendString(b, f.key)
		b = append(b, ": "...)
		b = append(b, f.val...)
		if i < len(d.extra)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// oldObjWriter writes a one-line object with ", " and ": " separators.
type oldObjWriter struct {
	b []byte
	n int
}

func (w *oldObjWriter) key(k string) *oldObjWriter {
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

func (w *oldObjWriter) end() []byte {
	if w.n == 0 {
		return append(w.b, "{}"...)
	}
	return append(w.b, '}')
}

func oldAppendCost(b []byte, c Cost) []byte {
	w := oldObjWriter{b: b}
	w.key("usd").b = oldAppendFloat(w.b, c.USD)
	w.key("tokens").b = strconv.AppendInt(w.b, c.Tokens, 10)
	w.key("seconds").b = oldAppendFloat(w.b, c.Seconds)
	return w.end()
}

func oldAppendGates(b []byte, g Gates) []byte {
	w := oldObjWriter{b: b}
	w.key("max_ticks").b = oldAppendOptInt(w.b, g.MaxTicks)
	w.key("max_consecutive_failures").b = oldAppendOptInt(w.b, g.MaxConsecutiveFailures)
	w.key("max_failures_total").b = oldAppendOptInt(w.b, g.MaxFailuresTotal)
	bw := oldObjWriter{b: w.key("budget").b}
	bw.key("usd").b = oldAppendOptFloat(bw.b, g.BudgetUSD)
	bw.key("tokens").b = oldAppendOptInt(bw.b, g.BudgetTokens)
	bw.key("seconds").b = oldAppendOptFloat(bw.b, g.BudgetSeconds)
	w.b = bw.end()
	if g.ExpiresAt == nil {
		w.key("expires_at").b = append(w.b, "null"...)
	} else {
		w.key("expires_at").b = oldAppendTime(w.b, *g.ExpiresAt)
	}
	w.key("checkpoint_every").b = oldAppendOptInt(w.b, g.CheckpointEvery)
	w.key("tick_timeout_s").b = oldAppendOptFloat(w.b, g.TickTimeout)
	return w.end()
}

func oldAppendOptInt(b []byte, p *int64) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *p, 10)
}

func oldAppendOptFloat(b []byte, p *float64) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return oldAppendFloat(b, *p)
}

// oldAppendFloat writes f as JSON the way Python's json does for the values the
// format holds: the shortest digits that read back as f, with ".0" on a whole
// number (0.0, 5.0, 3110.5), and an exponent only beyond 1e21 or below 1e-6.
func oldAppendFloat(b []byte, f float64) []byte {
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

func oldAppendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, oldTimeLayout)
	return append(b, '"')
}

func oldAppendOptString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return oldAppendString(b, s)
}

func oldAppendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = oldAppendString(b, s)
	}
	return append(b, ']')
}

const oldHexDigits = "0123456789abcdef"

// oldAppendString writes s as a JSON string: UTF-8 kept as is, quotes,
// backslashes and control characters escaped, invalid UTF-8 replaced by
// U+FFFD.
func oldAppendString(b []byte, s string) []byte {
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
				b = append(b, '\\', 'u', '0', '0', oldHexDigits[c>>4], oldHexDigits[c&0xf])
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

// oldParseRecord reads one tick-log line. It is lenient about what it does not
// need (unknown keys are ignored) and strict about what it reads.
func oldParseRecord(line []byte) (TickRecord, error) {
	if err := oldCheckJSON("tick", line); err != nil {
		return TickRecord{}, err
	}
	o, err := oldReadObj("tick", line)
	if err != nil {
		return TickRecord{}, err
	}
	r := oldReader{o: o}
	var t TickRecord
	t.N = r.int("n")
	t.StartedAt = r.time("started_at", false)
	t.EndedAt = r.time("ended_at", false)
	t.Outcome = Outcome(r.str("outcome", false))
	t.SkipReason = r.str("skip_reason", true)
	t.StatusBefore = Status(r.str("status_before", false))
	t.StatusAfter = Status(r.str("status_after", false))
	if v, err := o.get("exit_code"); err != nil {
		r.take(err)
	} else if !oldIsNull(v) {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			r.take(oldMalformed("tick.exit_code", "want an integer or null, got %.40s", v))
		}
		t.ExitCode = &n
	}
	t.Cost = r.cost("cost")
	t.GatesTripped = r.strs("gates_tripped")
	t.Trigger = Trigger(r.str("trigger", false))
	t.PID = int(r.int("pid"))
	t.Note = r.str("note", false)
	return t, r.err
}

// oldAppendRecord appends r as one JSON line, keys in the format's order.
func oldAppendRecord(b []byte, r *TickRecord) []byte {
	w := oldObjWriter{b: b}
	w.key("n").b = strconv.AppendInt(w.b, r.N, 10)
	w.key("started_at").b = oldAppendTime(w.b, r.StartedAt)
	w.key("ended_at").b = oldAppendTime(w.b, r.EndedAt)
	w.key("outcome").b = oldAppendString(w.b, string(r.Outcome))
	w.key("skip_reason").b = oldAppendOptString(w.b, string(r.SkipReason))
	w.key("status_before").b = oldAppendString(w.b, string(r.StatusBefore))
	w.key("status_after").b = oldAppendString(w.b, string(r.StatusAfter))
	if r.ExitCode == nil {
		w.key("exit_code").b = append(w.b, "null"...)
	} else {
		w.key("exit_code").b = strconv.AppendInt(w.b, int64(*r.ExitCode), 10)
	}
	w.key("cost").b = oldAppendCost(w.b, r.Cost)
	gates := r.GatesTripped
	if gates == nil {
		gates = []string{}
	}
	w.key("gates_tripped").b = oldAppendStrings(w.b, gates)
	w.key("trigger").b = oldAppendString(w.b, string(r.Trigger))
	w.key("pid").b = strconv.AppendInt(w.b, int64(r.PID), 10)
	w.key("note").b = oldAppendString(w.b, truncNote(r.Note))
	return append(w.end(), '\n')
}
