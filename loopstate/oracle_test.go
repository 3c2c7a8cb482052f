package loopstate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// oldCodecDecode is what the old hand-written codec's Decode did (with the
// zero Codec): decode, then check the invariants.
func oldCodecDecode(data []byte) (*Doc, error) {
	d, err := oldDecode(data)
	if err == nil {
		err = d.validate()
	}
	return d, err
}

// sentinel is the kind of a refusal: "format" for a *filetxn.FormatError,
// else the error's text.
func sentinel(err error) string {
	if _, _, ok := refusal(err); ok {
		return "format"
	}
	return err.Error()
}

// plain is d without the bytes it was decoded from, for comparing what two
// decoders made of the same bytes.
func plain(d *Doc) Doc {
	c := *d
	c.raw, c.read = nil, nil
	return c
}

// agree checks the differential property on one input: the new codec
// accepts exactly what the old one accepted, decodes it to the same Doc
// (unknown keys included), encodes it unchanged to the input, and refuses
// what the old one refused with the same sentinel. A changed Doc's
// canonical encoding is the old one's, and the old decoder reads it back to
// the same Doc.
func agree(t require.TestingT, data []byte) {
	want, werr := oldCodecDecode(data)
	got, gerr := codec{}.Decode(data)
	require.Equal(t, werr == nil, gerr == nil, "Decode(%q) = %v, the old codec's = %v", data, gerr, werr)
	if werr != nil {
		require.Equal(t, sentinel(werr), sentinel(gerr), "Decode(%q) = %v, the old codec's = %v", data, gerr, werr)
		return
	}
	require.True(t, reflect.DeepEqual(plain(want), plain(got)), "Decode(%q) = %+v, the old codec's = %+v", data, plain(got), plain(want))
	out, err := codec{}.Encode(got)
	require.NoError(t, err, "Encode(Decode(%q)) = %v", data, err)
	require.Equal(t, string(data), string(out), "Encode(Decode(%q)) = %q, want the input", data, out)
	canon, old := got.canonical(), string(oldCanonical(want, nil))
	if !strings.ContainsAny(old, "\b\f\u2028\u2029") { // escaped by encoding/json, kept by the old codec
		require.Equal(t, old, canon, "canonical(Decode(%q)) = %s, the old codec's differs", data, canon)
	}
	back, err := oldCodecDecode([]byte(canon))
	require.NoError(t, err, "the old codec's Decode(canonical of %q) = %v", data, err)
	require.True(t, reflect.DeepEqual(plain(back), plain(got)), "the old codec reads the canonical of %q as %+v, want %+v", data, plain(back), plain(got))
}

// oracleInputs are the documents of this package's tests and fuzz corpus.
func oracleInputs() [][]byte {
	d, _ := New("x", epoch0, Template{Name: "t<&>\u2028", Gates: Gates{MaxTicks: new(int64(2)), ExpiresAt: new(epoch0), TickTimeout: new(1.5)}})
	in := [][]byte{[]byte(specExample), []byte(specCanonical), []byte(d.canonical())}
	d.pause(epoch0, "a\"b", "c\nd\x01")
	in = append(in, []byte(d.canonical()))
	d.Resume(epoch0)
	d.beginTick(epoch0, 42, "linux:boot:1234")
	in = append(in,
		[]byte(strings.Replace(d.canonical(), "\n}\n", ", \"x\": {\"k\": [1e3, \"\\u0041\"], \"k\": 2}}", 1)),
		[]byte(strings.Replace(d.canonical(), `, "pid_start": "linux:boot:1234"`, "", 1)),
		[]byte(`{"schema": 2}`), []byte(`{"schema": -1}`), []byte(`{"schema": 1, "schema": 1}`), []byte("\xef\xbb\xbf{}"),
		[]byte(strings.Replace(specExample, "1.84", "1.84e0", 1)), []byte(""), []byte("[]"), []byte("null"),
		[]byte(specExample+"{}"))
	good := func() string { d, _ := New("x", epoch0, Template{}); return d.canonical() }()
	for _, e := range [][2]string{
		{`"x"`, "\"\xff\""}, {`"schema": 1`, `"schema": "1"`}, {`"schema": 1,`, ``},
		{`  "last_approval": null`, `  "x_other": null`}, {`"tick_count": 0,`, `"tick_count": 0, "tick_count": 1,`},
		{`"tick_count": 0`, `"tick_count": -1`}, {`"tick_count": 0`, `"tick_count": 1.0`}, {`"tick_count": 0`, `"tick_count": null`},
		{`"tick_count": 0`, `"tick_count": 99999999999999999999`}, {`"tick_count": 0`, `"tick_count": "0"`},
		{`"created_at": "2025-05-01T09:00:00Z"`, `"created_at": "2025-05-01T10:00:00+01:00"`},
		{`"created_at": "2025-05-01T09:00:00Z"`, `"created_at": "2025-05-01T09:00:00.5Z"`},
		{`"created_at": "2025-05-01T09:00:00Z"`, `"created_at": null`}, {`"created_at": "2025-05-01T09:00:00Z"`, `"created_at": 1`},
		{`"status": "running"`, `"status": "sleeping"`}, {`"status": "running"`, `"status": null`},
		{`"max_ticks": null`, `"max_tick": 3`}, {`"max_ticks": null`, `"max_ticks": -3`}, {`"max_ticks": null, `, ``},
		{`"checkpoint_every": null`, `"checkpoint_every": 0`}, {`"budget": {"usd": null`, `"budget": {"usd": "5"`},
		{`"budget": {"usd": null, "tokens": null, "seconds": null}`, `"budget": null`},
		{`"budget": {"usd": null, "tokens": null, "seconds": null}`, `"budget": {}`},
		{`"budget": {"usd": null`, `"budget": {"usd": 1e400`}, {`"spent": {"usd": 0.0,`, `"spent": {"eur": 1, "usd": 0.0,`},
		{`"spent": {"usd": 0.0,`, `"spent": {"usd": -1.0,`}, {`"spent": {"usd": 0.0,`, `"spent": {"usd": 0.0, "usd": 0.0,`},
		{`"spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}`, `"spent": null`},
		{`"spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}`, `"spent": []`},
		{`"template": null`, `"template": ""`}, {`"template": null`, `"template": "a\u0000b"`},
		{`"enabled": false`, `"enabled": null`}, {`"enabled": false`, `"enabled": 0`}, {`"every": null`, `"every": ""`},
		{`"pause": null`, `"pause": {"at": "2025-05-01T09:00:00Z", "by": "a", "reason": "b"}`},
		{`"epoch": {`, `"epoch": {"x": 1, `}, {`"tick": 0, "spent": {"usd": 0.0`, `"tick": 0, "spent": {"usd": 1.0`},
	} {
		in = append(in, []byte(strings.Replace(good, e[0], e[1], 1)))
	}
	halted := strings.Replace(good, `"status": "running"`, `"status": "halted"`, 1)
	for _, h := range []string{
		`{"at": "2025-05-01T09:00:00Z", "gates": ["max_ticks"], "reason": "", "tick": 0}`,
		`{"at": "2025-05-01T09:00:00Z", "gates": ["moon"], "reason": "", "tick": 0}`,
		`{"at": "2025-05-01T09:00:00Z", "gates": [], "reason": "", "tick": 0}`,
		`{"at": "2025-05-01T09:00:00Z", "gates": null, "reason": "", "tick": 0}`,
		`{"at": "2025-05-01T09:00:00Z", "gates": [null], "reason": "", "tick": 0}`,
		`{"at": "2025-05-01T09:00:00Z", "gates": "max_ticks", "reason": "", "tick": 0}`,
	} {
		in = append(in, []byte(strings.Replace(halted, `"halt": null`, `"halt": `+h, 1)))
	}
	running := strings.Replace(good, `"current_tick": null`, `"current_tick": {"n": 1, "started_at": "2025-05-01T09:00:00Z", "pid": 2147483648, "pid_start": null}`, 1)
	return append(in, []byte(running), []byte(strings.Replace(running, "2147483648", "7", 1)))
}

// TestDecodeAgreesWithTheOldCodecOnTheTestInputs: the differential test
// over every document of this package's codec tests and fuzz seeds.
// Ablation (run): a wireGates without loop:"optional" on its thresholds
// refuses the format's own example, which the old codec accepted.
func TestDecodeAgreesWithTheOldCodecOnTheTestInputs(t *testing.T) {
	for _, data := range oracleInputs() {
		agree(t, data)
	}
}

// TestDecodeAgreesWithTheOldCodecOnDrawnStates: the differential test over
// drawn states (every status, counters up to the largest, floats of every
// size, free text with quotes, controls and non-ASCII, unknown keys), in
// the canonical layout, compacted, and with one byte changed.
func TestDecodeAgreesWithTheOldCodecOnDrawnStates(t *testing.T) {
	text := rapid.SampledFrom([]string{"", "a", `q"u\o`, "line\nbreak\ttab\x01", "ünï 中文", "<&>", "\u2028", strings.Repeat("z", 300)})
	rapid.Check(t, func(t *rapid.T) {
		dm := newDocMachine(t)
		d := dm.d
		d.Template = text.Draw(t, "template")
		d.Schedule = Schedule{Enabled: rapid.Bool().Draw(t, "enabled"), Every: text.Draw(t, "every")}
		if d.Paused != nil {
			d.Paused.By, d.Paused.Reason = text.Draw(t, "by"), text.Draw(t, "reason")
		}
		if rapid.Bool().Draw(t, "approved") {
			d.LastApproval = &Event{At: epoch0.Add(time.Duration(rapid.IntRange(0, 1e6).Draw(t, "at")) * time.Second), By: text.Draw(t, "approved by"), Reason: text.Draw(t, "note"), Tick: drawCount(t, "approval tick")}
		}
		for i := range rapid.IntRange(0, 2).Draw(t, "extra keys") {
			d.extra = append(d.extra, kv{key: "x" + text.Draw(t, "extra key"), val: []byte(rapid.SampledFrom([]string{`null`, `[1,{"a":"b"}]`, `"v"`, `{"k":{}}`}).Draw(t, "extra value"))})
			if i == 1 && d.extra[0].key == d.extra[1].key {
				d.extra = d.extra[:1]
			}
		}
		data := oldCanonical(d, nil)
		switch rapid.IntRange(0, 2).Draw(t, "layout") {
		case 1:
			var b bytes.Buffer
			if err := json.Compact(&b, data); err == nil {
				data = b.Bytes()
			}
		case 2:
			i := rapid.IntRange(0, len(data)-1).Draw(t, "byte")
			data = bytes.Clone(data)
			data[i] = rapid.SampledFrom([]byte(`{}[]":, 0-1.eE"n\zZ`)).Draw(t, "to")
		}
		agree(t, data)
	})
}

// FuzzDecodeAgreesWithTheOldCodec is the differential test on any bytes.
func FuzzDecodeAgreesWithTheOldCodec(f *testing.F) {
	for _, data := range oracleInputs() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}

// agreeRecord checks the differential property on one tick-log line: the
// new reader accepts exactly the lines the old one accepted, reads them as
// the same record, and writes a record as the old writer did (but for the
// characters encoding/json escapes and the old writer did not).
func agreeRecord(t require.TestingT, line []byte) {
	want, werr := oldParseRecord(line)
	got, gerr := parseRecord(line)
	require.Equal(t, werr == nil, gerr == nil, "parseRecord(%q) = %v, the old reader's = %v", line, gerr, werr)
	if werr != nil {
		return
	}
	// The old reader kept the bytes of a note that is not UTF-8 (a torn or
	// damaged line); encoding/json reads each bad byte as U+FFFD.
	want.Note = string([]rune(want.Note))
	require.True(t, reflect.DeepEqual(want, got), "parseRecord(%q) = %+v, the old reader's = %+v", line, got, want)
	old := string(oldAppendRecord(nil, &got))
	if !strings.ContainsAny(old, "\b\f\u2028\u2029") {
		require.Equal(t, old, string(appendRecord(nil, &got)), "appendRecord(%+v), the old writer's differs", got)
	}
}

// specLine is the tick-log example of the format.
const specLine = `{"n": 20, "started_at": "2025-05-02T14:29:01Z", "ended_at": "2025-05-02T14:30:04Z", "outcome": "ok", "skip_reason": null, "status_before": "running", "status_after": "halted", "exit_code": 0, "cost": {"usd": 0.09, "tokens": 21000, "seconds": 63.0}, "gates_tripped": ["max_ticks"], "trigger": "schedule", "pid": 48211, "note": "3 failing checks classified"}`

// TestTickLogAgreesWithTheOldReaderAndWriter: the differential test of the
// tick log, over the format's example, its edits and drawn records.
// Ablation (run): parseRecord without checkObject reads a line that lacks
// "n", which the old reader refused.
func TestTickLogAgreesWithTheOldReaderAndWriter(t *testing.T) {
	agreeRecord(t, []byte(specLine))
	for _, e := range [][2]string{
		{`"exit_code": 0`, `"exit_code": null`}, {`"exit_code": 0`, `"exit_code": -9`}, {`"exit_code": 0`, `"exit_code": 1.5`},
		{`"skip_reason": null`, `"skip_reason": ""`}, {`"skip_reason": null`, `"skip_reason": "busy"`},
		{`"n": 20`, `"n": -1`}, {`"n": 20, `, ``}, {`"n": 20`, `"n": 20, "n": 21`}, {`"n": 20`, `"n": 20, "extra": {"a": 1, "a": 2}`},
		{`["max_ticks"]`, `[]`}, {`["max_ticks"]`, `null`}, {`["max_ticks"]`, `[1]`},
		{`"seconds": 63.0`, `"seconds": -1`}, {`"cost": {`, `"cost": {"eur": 1, `}, {`"note": "3`, `"note": null, "x": "3`},
		{`"started_at": "2025-05-02T14:29:01Z"`, `"started_at": "2025-05-02T14:29:01.1Z"`},
	} {
		agreeRecord(t, []byte(strings.Replace(specLine, e[0], e[1], 1)))
	}
	text := rapid.SampledFrom([]string{"", "a", `q"u\o`, "line\nbreak\x01", "ünï 中文", "<&>", strings.Repeat("é", 400)})
	rapid.Check(t, func(t *rapid.T) {
		r := TickRecord{
			N: drawCount(t, "n"), StartedAt: epoch0, EndedAt: epoch0.Add(time.Duration(rapid.IntRange(0, 1e6).Draw(t, "wall")) * time.Second),
			Outcome:      rapid.SampledFrom([]Outcome{OK, Fail, Timeout, Skipped, Abandoned}).Draw(t, "outcome"),
			SkipReason:   rapid.SampledFrom([]string{"", skipPaused, skipBusy, skipGate}).Draw(t, "skip"),
			StatusBefore: Running, StatusAfter: rapid.SampledFrom([]Status{Running, Paused, Halted}).Draw(t, "after"),
			Cost: drawCost(t, "cost"), GatesTripped: rapid.SliceOfN(rapid.SampledFrom(gateOrder), 0, 3).Draw(t, "gates"),
			Trigger: rapid.SampledFrom([]Trigger{TriggerManual, TriggerSchedule}).Draw(t, "trigger"),
			PID:     rapid.IntRange(0, 1<<22).Draw(t, "pid"), Note: text.Draw(t, "note"),
		}
		if rapid.Bool().Draw(t, "has exit code") {
			r.ExitCode = new(rapid.IntRange(-1, 255).Draw(t, "exit code"))
		}
		line := bytes.TrimSuffix(oldAppendRecord(nil, &r), []byte("\n"))
		if rapid.Bool().Draw(t, "one byte changed") {
			line = bytes.Clone(line)
			line[rapid.IntRange(0, len(line)-1).Draw(t, "byte")] = rapid.SampledFrom([]byte(`{}[]":, 0-1."n\z`)).Draw(t, "to")
		}
		agreeRecord(t, line)
	})
}
