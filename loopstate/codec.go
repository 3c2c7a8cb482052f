package loopstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/filetxn/filetxn"
)

// codec reads and writes state files for the filetxn engine (it is a
// filetxn.Codec[*Doc]). Decode refuses a document that is not the format or
// breaks an invariant, with a *filetxn.FormatError naming the key at fault
// (the engine wraps it in an *fs.PathError naming the file); Encode refuses
// to write a Doc that breaks one. A Doc that was
// decoded and not changed encodes to exactly the bytes it was decoded from,
// whatever their layout; a changed one is written in the canonical layout
// (one top-level key a line, in the format's order, nested objects on one
// line), after the known keys any unknown top-level keys it was read with.
// The zero codec checks no name.
type codec struct {
	path string // the file, for the error of a missing one
	name string // when set, the name the document must have (its directory's)
}

// Decode parses a state file. data must be the whole file; nil (a missing
// file) is refused with an error matching filetxn.ErrNotFound.
func (c codec) Decode(data []byte) (*Doc, error) {
	if data == nil {
		return nil, notFound(c.name, c.path+" does not exist")
	}
	d, err := decode(data)
	if err == nil {
		err = d.validate()
	}
	if err == nil && c.name != "" && d.Name != c.name {
		err = invariant("name", invName, "name is %q in the directory of %q", d.Name, c.name)
	}
	if err != nil {
		return nil, err
	}
	d.read = d.clone()
	d.raw = data[:len(data):len(data)] // Decode may keep data (filetxn.Codec): Encode gives it back unchanged
	return d, nil
}

// Encode returns the bytes of d: the bytes it was decoded from when nothing
// has changed, else its canonical encoding. It returns a *filetxn.FormatError
// when d breaks an invariant (or its name is not c.name), and then nothing
// must be written.
func (c codec) Encode(d *Doc) ([]byte, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	if c.name != "" && d.Name != c.name {
		return nil, invariant("name", invName, "name %q written to the directory of %q", d.Name, c.name)
	}
	out, changed := d.encode()
	if !changed {
		return d.raw, nil
	}
	return out, nil
}

// encode returns d's canonical encoding, or nil when it has not changed
// since it was decoded (equal to the Doc as decoded, or encoding as it did:
// a time in another location, say, is no change), and whether it has
// changed. A Doc that was not decoded has changed.
func (d *Doc) encode() ([]byte, bool) {
	if d.read == nil {
		return d.appendCanonical(nil), true
	}
	now := *d
	now.raw, now.read = nil, nil
	if reflect.DeepEqual(&now, d.read) {
		return nil, false
	}
	out := d.appendCanonical(nil)
	if bytes.Equal(out, d.read.appendCanonical(nil)) {
		return nil, false
	}
	return out, true
}

// MarshalJSON returns the state as its file holds it: the bytes it was
// decoded from when it has not changed, else the canonical layout of the
// format. A Doc that breaks an invariant gives a *filetxn.FormatError.
func (d *Doc) MarshalJSON() ([]byte, error) {
	b, err := codec{}.Encode(d)
	return bytes.Clone(b), err
}

// UnmarshalJSON reads a state file's document into d, as the package reads
// its files: strictly (every key present, none unknown or repeated, values
// of the format's types, the invariants kept), keeping unknown top-level
// keys and the bytes read. A document it refuses gives a
// *filetxn.FormatError naming the key at fault, and d is left as it was.
func (d *Doc) UnmarshalJSON(data []byte) error {
	// Never nil, even for nil data: Decode takes nil for a missing file.
	v, err := codec{}.Decode(append([]byte{}, data...))
	if err != nil {
		return err
	}
	*d = *v
	return nil
}

// ---- the wire types: the file's documents, field for field ----

// wireDoc is a .state.loop document, its keys in the format's order. Every
// key must be present (the decoder checks, see checkObject), except those
// tagged loop:"optional"; a pointer is a value that may be null.
type wireDoc struct {
	Schema              int           `json:"schema"` // read first, apart (decode)
	Name                str           `json:"name"`
	Template            *nonEmpty     `json:"template"`
	Status              str           `json:"status"`
	CreatedAt           timestamp     `json:"created_at"`
	UpdatedAt           timestamp     `json:"updated_at"`
	LastTickAt          *timestamp    `json:"last_tick_at"`
	TickCount           count         `json:"tick_count"`
	ResumedCount        count         `json:"resumed_count"`
	ConsecutiveFailures count         `json:"consecutive_failures"`
	FailuresTotal       count         `json:"failures_total"`
	Spent               wireCost      `json:"spent"`
	Epoch               wireEpoch     `json:"epoch"`
	Gates               wireGates     `json:"gates"`
	Schedule            wireSchedule  `json:"schedule"`
	CurrentTick         *wireTick     `json:"current_tick"`
	Pause               *wirePause    `json:"pause"`
	Halt                *wireHalt     `json:"halt"`
	LastApproval        *wireApproval `json:"last_approval"`
}

type wireCost struct {
	USD     number `json:"usd"`
	Tokens  count  `json:"tokens"`
	Seconds number `json:"seconds"`
}

type wireEpoch struct {
	StartedAt timestamp `json:"started_at"`
	Tick      count     `json:"tick"`
	Spent     wireCost  `json:"spent"`
}

// wireGates is the gates object. A threshold that is absent reads as null
// (the format's own example leaves some out); an unknown key is refused,
// so that a misspelt threshold never reads as "no gate".
type wireGates struct {
	MaxTicks               *count      `json:"max_ticks" loop:"optional"`
	MaxConsecutiveFailures *count      `json:"max_consecutive_failures" loop:"optional"`
	MaxFailuresTotal       *count      `json:"max_failures_total" loop:"optional"`
	Budget                 *wireBudget `json:"budget" loop:"optional"`
	ExpiresAt              *timestamp  `json:"expires_at" loop:"optional"`
	CheckpointEvery        *count      `json:"checkpoint_every" loop:"optional"`
	TickTimeout            *number     `json:"tick_timeout_s" loop:"optional"`
}

type wireBudget struct {
	USD     *number `json:"usd" loop:"optional"`
	Tokens  *count  `json:"tokens" loop:"optional"`
	Seconds *number `json:"seconds" loop:"optional"`
}

type wireSchedule struct {
	Enabled flag      `json:"enabled"`
	Every   *nonEmpty `json:"every"`
}

type wireTick struct {
	N         count     `json:"n"`
	StartedAt timestamp `json:"started_at"`
	PID       count     `json:"pid"`
	PIDStart  *nonEmpty `json:"pid_start" loop:"optional"` // absent from files written before it existed
}

type wirePause struct {
	At     timestamp `json:"at"`
	By     str       `json:"by"`
	Reason str       `json:"reason"`
}

type wireHalt struct {
	At     timestamp `json:"at"`
	Gates  []str     `json:"gates"`
	Reason str       `json:"reason"`
	Tick   count     `json:"tick"`
}

type wireApproval struct {
	At   timestamp `json:"at"`
	By   str       `json:"by"`
	Note str       `json:"note"`
	Tick count     `json:"tick"`
}

// The scalars of the format. Each refuses, as a *json.UnmarshalTypeError
// (which encoding/json completes with the key's dotted path), null and any
// value that is not its kind; null is allowed only through a pointer.
type (
	str       string    // a string
	nonEmpty  string    // a string that is not empty (as *nonEmpty: null or that)
	count     int64     // an integer from 0 to 2^63-1
	number    float64   // a finite number, at least 0
	flag      bool      // true or false
	timestamp time.Time // RFC 3339 in UTC with a Z and whole seconds
)

// timeLayout is RFC 3339 in UTC with a Z and whole seconds, the only
// spelling of a timestamp the format allows.
const timeLayout = "2006-01-02T15:04:05Z"

// want says, for an error, what a value of wire type t must be.
func want(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[str]():
		return "a string"
	case reflect.TypeFor[nonEmpty]():
		return "a non-empty string or null"
	case reflect.TypeFor[count]():
		return "a non-negative integer"
	case reflect.TypeFor[number]():
		return "a non-negative number"
	case reflect.TypeFor[flag]():
		return "true or false"
	case reflect.TypeFor[timestamp]():
		return "an RFC 3339 UTC timestamp with seconds and Z (2025-05-01T09:00:00Z)"
	}
	return "a " + t.Kind().String()
}

func refuse[T any](b []byte) error {
	return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[T]()}
}

func (s *str) UnmarshalJSON(b []byte) error {
	if b[0] != '"' {
		return refuse[str](b)
	}
	return unquote(b, (*string)(s))
}

func (s *nonEmpty) UnmarshalJSON(b []byte) error {
	if b[0] != '"' || string(b) == `""` {
		return refuse[nonEmpty](b)
	}
	return unquote(b, (*string)(s))
}

// unquote sets *s to the JSON string b (valid JSON: the decoder checked),
// as encoding/json reads it. A string of UTF-8 without a backslash is the
// bytes between the quotes; any other is left to encoding/json, which
// unescapes it and reads a byte that is not UTF-8 as U+FFFD.
func unquote(b []byte, s *string) error {
	if bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		*s = string(b[1 : len(b)-1])
		return nil
	}
	return json.Unmarshal(b, s)
}

func (n *count) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || b[0] < '0' || b[0] > '9' {
		return refuse[count](b)
	}
	*n = count(v)
	return nil
}

func (n *number) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || b[0] < '0' || b[0] > '9' {
		return refuse[number](b)
	}
	*n = number(v)
	return nil
}

// MarshalJSON writes n the way Python's json does for the values the format
// holds: the shortest digits that read back as n, with ".0" on a whole
// number (0.0, 5.0, 3110.5), and an exponent only beyond 1e21 or below 1e-6.
func (n number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil // Validate refuses these before any encode
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if !bytes.ContainsAny(b, ".e") {
		b = append(b, ".0"...)
	}
	return b, nil
}

func (f *flag) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true", "false":
		*f = string(b) == "true"
		return nil
	}
	return refuse[flag](b)
}

func (s *timestamp) UnmarshalJSON(b []byte) error {
	var v string
	if b[0] != '"' || unquote(b, &v) != nil {
		return refuse[timestamp](b)
	}
	t, err := time.Parse(timeLayout, v)
	if err != nil || t.Format(timeLayout) != v {
		return refuse[timestamp](b)
	}
	*s = timestamp(t)
	return nil
}

// MarshalJSON writes the zero time as null.
func (s timestamp) MarshalJSON() ([]byte, error) {
	t := time.Time(s)
	if t.IsZero() {
		return []byte("null"), nil
	}
	return t.UTC().AppendFormat([]byte(`"`), timeLayout+`"`), nil
}

// ---- decoding ----

// malformed returns the *filetxn.FormatError of a document that is not the
// format at key ("" for the whole document).
func malformed(key, format string, args ...any) error {
	return &filetxn.FormatError{Key: key, Err: fmt.Errorf(format, args...)}
}

// invariant returns the *filetxn.FormatError of a document that breaks the
// invariant name of the format at key.
func invariant(key, name, format string, args ...any) error {
	return &filetxn.FormatError{Key: key, Err: &brokenInvariant{name: name, detail: fmt.Sprintf(format, args...)}}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decode parses data into a Doc without checking the invariants.
func decode(data []byte) (*Doc, error) {
	var w wireDoc
	var extra []kv
	switch {
	case !utf8.Valid(data):
		return nil, malformed("", "not UTF-8")
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		return nil, malformed("", "starts with a byte order mark")
	}
	if err := checkJSON("", data); err != nil {
		return nil, err
	}
	keys, err := objectKeys("", data)
	if err != nil {
		return nil, err
	}
	// The schema first: a document of another major may have other keys.
	i := find(keys, "schema")
	if i < 0 {
		return nil, malformed("schema", "missing (every key is always present; an unset value is null)")
	}
	schema, err := strconv.Atoi(string(keys[i].val))
	if err != nil {
		return nil, malformed("schema", "want an integer, got %.40s", keys[i].val)
	}
	if schema != schemaVersion {
		return nil, malformed("schema", "major %d, this reader knows %d", schema, schemaVersion)
	}
	if err := checkObject("", keys, reflect.TypeFor[wireDoc](), &extra); err != nil {
		return nil, err
	}
	if err := unmarshal(data, &w); err != nil {
		return nil, err
	}
	if w.CurrentTick != nil && w.CurrentTick.PID > math.MaxInt32 {
		return nil, malformed("current_tick.pid", "%d is out of range", w.CurrentTick.PID)
	}
	d := w.doc()
	d.extra = extra
	if err := d.Gates.validate(); err != nil {
		return nil, err
	}
	return d, nil
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

// unmarshal decodes valid JSON whose shape checkObject has checked into
// v, turning a value of the wrong type into a *filetxn.FormatError naming
// its key.
func unmarshal(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return malformed(te.Field, "want %s, got %.40s", want(te.Type), te.Value)
	}
	return err
}

// kv is one key of a JSON object and its raw value.
type kv struct {
	key string
	val json.RawMessage
}

func find(kvs []kv, key string) int {
	for i := range kvs {
		if kvs[i].key == key {
			return i
		}
	}
	return -1
}

// objectKeys returns the keys of the JSON object raw, which is valid JSON,
// in file order, refusing a value that is not an object and a key that is
// there twice (encoding/json would keep the last one silently).
func objectKeys(path string, raw []byte) ([]kv, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		if path == "" {
			return nil, malformed(path, "document is not a JSON object")
		}
		return nil, malformed(path, "want an object, got %.40s", raw)
	}
	var kvs []kv
	var seen map[string]bool // the keys, once there are too many to scan
	for dec.More() {
		tok, _ := dec.Token()
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, malformed(join(path, key), "%v", err) // cannot happen: raw is valid
		}
		// A scan of the keys so far is cheapest for the objects of the
		// format; a map keeps an object of many unknown keys linear (100,000
		// took 12 seconds to read with the scan alone).
		if seen == nil && len(kvs) >= 32 {
			seen = make(map[string]bool, 2*len(kvs))
			for _, kv := range kvs {
				seen[kv.key] = true
			}
		}
		if seen != nil && seen[key] || seen == nil && find(kvs, key) >= 0 {
			return nil, malformed(join(path, key), "duplicate key")
		}
		if seen != nil {
			seen[key] = true
		}
		kvs = append(kvs, kv{key, val})
	}
	return kvs, nil
}

// checkObject checks the keys of an object against t, the wire struct it
// decodes into: no key unknown (or, with extra, unknown top-level keys are
// kept there, compacted, in file order), none missing unless its field is
// tagged loop:"optional", no key twice, and recursively the same of every
// nested object and list. The values themselves are checked by their
// types when the document is unmarshalled.
func checkObject(path string, kvs []kv, t reflect.Type, extra *[]kv) error {
	fields := wireFields[t]
	for _, e := range kvs {
		i := slices.IndexFunc(fields, func(f wireField) bool { return f.name == e.key })
		switch {
		case i >= 0:
			if err := checkShape(join(path, e.key), e.val, fields[i].typ); err != nil {
				return err
			}
		case extra != nil:
			var b bytes.Buffer
			json.Compact(&b, e.val) // e.val is valid JSON
			*extra = append(*extra, kv{e.key, b.Bytes()})
		default:
			return malformed(join(path, e.key), "unknown key")
		}
	}
	for _, f := range fields {
		if !f.optional && find(kvs, f.name) < 0 {
			return malformed(join(path, f.name), "missing (every key is always present; an unset value is null)")
		}
	}
	return nil
}

// A wireField is a key of a wire struct.
type wireField struct {
	name     string       // the key
	typ      reflect.Type // its value's wire type
	optional bool         // the key may be absent (tagged loop:"optional")
}

// wireFields lists the keys of every wire struct, worked out once from
// their tags; it is never changed.
var wireFields = func() map[reflect.Type][]wireField {
	m := map[reflect.Type][]wireField{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if _, done := m[t]; done || t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshaler) {
			return
		}
		m[t] = []wireField{}
		for i := range t.NumField() {
			f := t.Field(i)
			m[t] = append(m[t], wireField{jsonName(f), f.Type, f.Tag.Get("loop") == "optional"})
			add(f.Type)
		}
	}
	add(reflect.TypeFor[wireDoc]())
	add(reflect.TypeFor[wireRecord]())
	return m
}()

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// checkShape checks one value against its wire type: an object or a list
// where the type is one (null only where it is a pointer), and the keys of
// an object (checkObject). A scalar is left to its type.
func checkShape(path string, raw []byte, t reflect.Type) error {
	if t.Kind() == reflect.Pointer {
		if string(raw) == "null" {
			return nil
		}
		t = t.Elem()
	}
	switch {
	case reflect.PointerTo(t).Implements(unmarshaler):
		return nil
	case t.Kind() == reflect.Slice:
		var elems []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
			return malformed(path, "want a list, got %.40s", raw)
		}
		for _, e := range elems {
			if err := checkShape(path, e, t.Elem()); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Struct:
		kvs, err := objectKeys(path, raw)
		if err != nil {
			return err
		}
		return checkObject(path, kvs, t, nil)
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// doc converts a decoded document to a Doc.
func (w *wireDoc) doc() *Doc {
	d := &Doc{
		schema:              w.Schema,
		Name:                string(w.Name),
		Template:            optString(w.Template),
		Status:              Status(w.Status),
		CreatedAt:           time.Time(w.CreatedAt),
		UpdatedAt:           time.Time(w.UpdatedAt),
		TickCount:           int64(w.TickCount),
		ResumedCount:        int64(w.ResumedCount),
		ConsecutiveFailures: int64(w.ConsecutiveFailures),
		FailuresTotal:       int64(w.FailuresTotal),
		Spent:               w.Spent.cost(),
		Epoch:               Epoch{StartedAt: time.Time(w.Epoch.StartedAt), Tick: int64(w.Epoch.Tick), Spent: w.Epoch.Spent.cost()},
		Schedule:            Schedule{Enabled: bool(w.Schedule.Enabled), Every: optString(w.Schedule.Every)},
	}
	if w.LastTickAt != nil {
		d.LastTickAt = time.Time(*w.LastTickAt)
	}
	g := &w.Gates
	d.Gates = Gates{
		MaxTicks:               (*int64)(g.MaxTicks),
		MaxConsecutiveFailures: (*int64)(g.MaxConsecutiveFailures),
		MaxFailuresTotal:       (*int64)(g.MaxFailuresTotal),
		ExpiresAt:              (*time.Time)(g.ExpiresAt),
		CheckpointEvery:        (*int64)(g.CheckpointEvery),
		TickTimeout:            (*float64)(g.TickTimeout),
	}
	if b := g.Budget; b != nil {
		d.Gates.BudgetUSD, d.Gates.BudgetTokens, d.Gates.BudgetSeconds = (*float64)(b.USD), (*int64)(b.Tokens), (*float64)(b.Seconds)
	}
	if c := w.CurrentTick; c != nil {
		d.current = &currentTick{N: int64(c.N), StartedAt: time.Time(c.StartedAt), PID: int(c.PID), pidStart: optString(c.PIDStart)}
	}
	if p := w.Pause; p != nil {
		d.Paused = &Event{At: time.Time(p.At), By: string(p.By), Reason: string(p.Reason)}
	}
	if h := w.Halt; h != nil {
		d.Halted = &Event{At: time.Time(h.At), Gates: make([]string, len(h.Gates)), Reason: string(h.Reason), Tick: int64(h.Tick)}
		for i, g := range h.Gates {
			d.Halted.Gates[i] = string(g)
		}
	}
	if a := w.LastApproval; a != nil {
		d.LastApproval = &Event{At: time.Time(a.At), By: string(a.By), Reason: string(a.Note), Tick: int64(a.Tick)}
	}
	return d
}

func (c wireCost) cost() Cost {
	return Cost{USD: float64(c.USD), Tokens: int64(c.Tokens), Seconds: float64(c.Seconds)}
}

func optString(s *nonEmpty) string {
	if s == nil {
		return ""
	}
	return string(*s)
}

// ---- encoding ----

// wire converts d to the document the file holds.
func (d *Doc) wire() *wireDoc {
	w := &wireDoc{
		Schema:              d.schema,
		Name:                str(d.Name),
		Template:            optNonEmpty(d.Template),
		Status:              str(d.Status),
		CreatedAt:           timestamp(d.CreatedAt),
		UpdatedAt:           timestamp(d.UpdatedAt),
		TickCount:           count(d.TickCount),
		ResumedCount:        count(d.ResumedCount),
		ConsecutiveFailures: count(d.ConsecutiveFailures),
		FailuresTotal:       count(d.FailuresTotal),
		Spent:               wireCostOf(d.Spent),
		Epoch:               wireEpoch{StartedAt: timestamp(d.Epoch.StartedAt), Tick: count(d.Epoch.Tick), Spent: wireCostOf(d.Epoch.Spent)},
		Gates:               d.Gates.wire(),
		Schedule:            wireSchedule{Enabled: flag(d.Schedule.Enabled), Every: optNonEmpty(d.Schedule.Every)},
	}
	if !d.LastTickAt.IsZero() {
		w.LastTickAt = (*timestamp)(&d.LastTickAt)
	}
	if c := d.current; c != nil {
		w.CurrentTick = &wireTick{N: count(c.N), StartedAt: timestamp(c.StartedAt), PID: count(c.PID), PIDStart: optNonEmpty(c.pidStart)}
	}
	if p := d.Paused; p != nil {
		w.Pause = &wirePause{At: timestamp(p.At), By: str(p.By), Reason: str(p.Reason)}
	}
	if h := d.Halted; h != nil {
		w.Halt = &wireHalt{At: timestamp(h.At), Gates: make([]str, len(h.Gates)), Reason: str(h.Reason), Tick: count(h.Tick)}
		for i, g := range h.Gates {
			w.Halt.Gates[i] = str(g)
		}
	}
	if a := d.LastApproval; a != nil {
		w.LastApproval = &wireApproval{At: timestamp(a.At), By: str(a.By), Note: str(a.Reason), Tick: count(a.Tick)}
	}
	return w
}

func (g Gates) wire() wireGates {
	return wireGates{
		MaxTicks:               (*count)(g.MaxTicks),
		MaxConsecutiveFailures: (*count)(g.MaxConsecutiveFailures),
		MaxFailuresTotal:       (*count)(g.MaxFailuresTotal),
		Budget:                 &wireBudget{USD: (*number)(g.BudgetUSD), Tokens: (*count)(g.BudgetTokens), Seconds: (*number)(g.BudgetSeconds)},
		ExpiresAt:              (*timestamp)(g.ExpiresAt),
		CheckpointEvery:        (*count)(g.CheckpointEvery),
		TickTimeout:            (*number)(g.TickTimeout),
	}
}

func wireCostOf(c Cost) wireCost {
	return wireCost{USD: number(c.USD), Tokens: count(c.Tokens), Seconds: number(c.Seconds)}
}

func optNonEmpty(s string) *nonEmpty {
	if s == "" {
		return nil
	}
	return (*nonEmpty)(&s)
}

// appendCanonical appends the canonical encoding of d: one top-level key a
// line, each value on one line, then the unknown keys.
func (d *Doc) appendCanonical(b []byte) []byte {
	var l liner
	b = append(b, "{\n"...)
	w := reflect.ValueOf(d.wire()).Elem()
	for i := range w.NumField() {
		b = append(b, `  "`+jsonName(w.Type().Field(i))+`": `...)
		b = l.append(b, w.Field(i).Interface())
		if i < w.NumField()-1 || len(d.extra) > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	for i, f := range d.extra {
		b = append(b, "  "...)
		b = l.append(b, f.key)
		b = append(b, ": "...)
		b = append(b, f.val...)
		if i < len(d.extra)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// appendLine appends v as JSON on one line (see liner).
func appendLine(b []byte, v any) []byte {
	var l liner
	return l.append(b, v)
}

// A liner writes values as JSON on one line, with ", " between the items of
// an object or list and ": " after a key, and without escaping HTML. Its
// buffers are reused from one value to the next.
type liner struct {
	enc      *json.Encoder
	buf, out bytes.Buffer
}

func (l *liner) append(b []byte, v any) []byte {
	if l.enc == nil {
		l.enc = json.NewEncoder(&l.buf)
		l.enc.SetEscapeHTML(false)
	}
	l.buf.Reset()
	l.out.Reset()
	if err := l.enc.Encode(v); err != nil {
		panic("loopstate: encoding a state: " + err.Error()) // the wire types always encode
	}
	// Indenting with an empty indent puts every item on a line of its own,
	// with ": " after each key. A newline inside a string is always
	// escaped, so each newline in the output is one of Indent's: dropped,
	// and after a comma replaced by a space.
	json.Indent(&l.out, bytes.TrimSuffix(l.buf.Bytes(), []byte("\n")), "", "")
	for _, c := range l.out.Bytes() {
		switch {
		case c != '\n':
			b = append(b, c)
		case b[len(b)-1] == ',':
			b = append(b, ' ')
		}
	}
	return b
}
