package loopstate

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/stretchr/testify/require"
)

// specExample is the example of the format's section 3, verbatim.
const specExample = `{"schema": 1, "name": "ci-triage-main", "template": "ci-triage",
 "status": "halted", "created_at": "2025-05-01T09:00:00Z",
 "updated_at": "2025-05-02T14:30:05Z", "last_tick_at": "2025-05-02T14:30:04Z",
 "tick_count": 20, "resumed_count": 0, "consecutive_failures": 0, "failures_total": 2,
 "spent": {"usd": 1.84, "tokens": 412000, "seconds": 3110.5},
 "epoch": {"started_at": "2025-05-01T09:00:00Z", "tick": 0,
           "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}},
 "gates": {"max_ticks": 20, "max_consecutive_failures": 3,
           "budget": {"usd": 5.0, "tokens": null, "seconds": null}, "expires_at": null},
 "schedule": {"enabled": true, "every": "15m"},
 "current_tick": null, "pause": null,
 "halt": {"at": "2025-05-02T14:30:05Z", "gates": ["max_ticks"],
          "reason": "max_ticks: 20 ticks in window >= 20", "tick": 20},
 "last_approval": null}
`

// specCanonical is specExample in the canonical layout, with the gate keys
// the example leaves out written as null.
const specCanonical = `{
  "schema": 1,
  "name": "ci-triage-main",
  "template": "ci-triage",
  "status": "halted",
  "created_at": "2025-05-01T09:00:00Z",
  "updated_at": "2025-05-02T14:30:05Z",
  "last_tick_at": "2025-05-02T14:30:04Z",
  "tick_count": 20,
  "resumed_count": 0,
  "consecutive_failures": 0,
  "failures_total": 2,
  "spent": {"usd": 1.84, "tokens": 412000, "seconds": 3110.5},
  "epoch": {"started_at": "2025-05-01T09:00:00Z", "tick": 0, "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}},
  "gates": {"max_ticks": 20, "max_consecutive_failures": 3, "max_failures_total": null, "budget": {"usd": 5.0, "tokens": null, "seconds": null}, "expires_at": null, "checkpoint_every": null, "tick_timeout_s": null},
  "schedule": {"enabled": true, "every": "15m"},
  "current_tick": null,
  "pause": null,
  "halt": {"at": "2025-05-02T14:30:05Z", "gates": ["max_ticks"], "reason": "max_ticks: 20 ticks in window >= 20", "tick": 20},
  "last_approval": null
}
`

// TestSpecExampleRoundTrips: the format's own example decodes, encodes back
// byte for byte while unchanged, and in the canonical layout once changed;
// the canonical bytes decode to the same state; its halt is what the gates
// say.
func TestSpecExampleRoundTrips(t *testing.T) {
	d, err := codec{}.Decode([]byte(specExample))
	if err != nil {
		t.Fatalf("Decode(spec example) = %v", err)
	}
	if out, err := (codec{}).Encode(d); err != nil || string(out) != specExample {
		t.Fatalf("Encode(Decode(spec example)) = %q, %v, want the input", out, err)
	}
	if got := d.canonical(); got != specCanonical {
		t.Fatalf("canonical(spec example) =\n%s\nwant\n%s", got, specCanonical)
	}
	d.Template = "changed"
	out, err := codec{}.Encode(d)
	if want := strings.Replace(specCanonical, `"ci-triage"`, `"changed"`, 1); err != nil || string(out) != want {
		t.Fatalf("Encode(changed) = %q, %v, want the canonical layout", out, err)
	}
	d2, err := codec{}.Decode(out)
	if err != nil || d2.canonical() != string(out) {
		t.Fatalf("Decode(canonical) = %v, %v", d2, err)
	}
	if trips := d.trippedGates(d.UpdatedAt); len(trips) != 1 || trips[0].reason != d.Halted.Reason {
		t.Fatalf("trippedGates = %v, want the example's halt reason %q", trips, d.Halted.Reason)
	}
}

// TestUnchangedDocEncodesToItsBytes: a Doc that nothing changed encodes to
// the bytes it was decoded from, whatever their layout, and Decode leaves
// them as they were. Ablation: Encode writing the canonical layout for an
// unchanged Doc makes it red.
func TestUnchangedDocEncodesToItsBytes(t *testing.T) {
	data := []byte(strings.ReplaceAll(specExample, "\n  ", "\n    "))
	d, err := codec{}.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := (codec{}).Encode(d); err != nil || string(out) != string(data) {
		t.Fatalf("Encode(unchanged Doc) = %.40q, %v, want the bytes decoded", out, err)
	}
}

// TestNewStateIsCanonical: the state New writes, byte for byte.
func TestNewStateIsCanonical(t *testing.T) {
	d, err := New("ci", time.Date(2025, 5, 1, 9, 0, 0, 700, time.FixedZone("x", 3600)), Template{
		Name:  "ci-triage",
		Gates: Gates{MaxTicks: i64(5), BudgetUSD: f64(2.5), ExpiresAt: tm(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)), TickTimeout: f64(90)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "schema": 1,
  "name": "ci",
  "template": "ci-triage",
  "status": "running",
  "created_at": "2025-05-01T08:00:00Z",
  "updated_at": "2025-05-01T08:00:00Z",
  "last_tick_at": null,
  "tick_count": 0,
  "resumed_count": 0,
  "consecutive_failures": 0,
  "failures_total": 0,
  "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0},
  "epoch": {"started_at": "2025-05-01T08:00:00Z", "tick": 0, "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}},
  "gates": {"max_ticks": 5, "max_consecutive_failures": null, "max_failures_total": null, "budget": {"usd": 2.5, "tokens": null, "seconds": null}, "expires_at": "2025-06-01T00:00:00Z", "checkpoint_every": null, "tick_timeout_s": 90.0},
  "schedule": {"enabled": false, "every": null},
  "current_tick": null,
  "pause": null,
  "halt": null,
  "last_approval": null
}
`
	if out, err := (codec{}).Encode(d); err != nil || string(out) != want {
		t.Fatalf("Encode(New) =\n%s%v\nwant\n%s", out, err, want)
	}
}

// TestDecodeRefusesWithTheKeyAtFault: each way a document can be wrong
// gives a *filetxn.FormatError naming the key at fault (and, for a broken
// invariant, the invariant).
func TestDecodeRefusesWithTheKeyAtFault(t *testing.T) {
	good := func() string {
		d, _ := New("x", epoch0, Template{})
		return d.canonical()
	}()
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	for _, tc := range []struct {
		name, doc string
		key, inv  string
	}{
		{"empty", "", "", ""},
		{"array", "[]", "", ""},
		{"bom", "\xef\xbb\xbf" + good, "", ""},
		{"not utf-8", edit(`"x"`, "\"\xff\""), "", ""},
		{"trailing data", good + "{}", "", ""},
		{"schema 2", edit(`"schema": 1`, `"schema": 2`), "schema", ""},
		{"schema string", edit(`"schema": 1`, `"schema": "1"`), "schema", ""},
		{"no schema", edit(`"schema": 1,`, ``), "schema", ""},
		{"missing key", edit(`  "last_approval": null`, `  "x_other": null`), "last_approval", ""},
		{"duplicate key", edit(`"tick_count": 0,`, `"tick_count": 0, "tick_count": 1,`), "tick_count", ""},
		{"negative counter", edit(`"tick_count": 0`, `"tick_count": -1`), "tick_count", ""},
		{"float counter", edit(`"tick_count": 0`, `"tick_count": 1.0`), "tick_count", ""},
		{"timestamp with offset", edit(`"created_at": "2025-05-01T09:00:00Z"`, `"created_at": "2025-05-01T10:00:00+01:00"`), "created_at", ""},
		{"timestamp with fraction", edit(`"created_at": "2025-05-01T09:00:00Z"`, `"created_at": "2025-05-01T09:00:00.5Z"`), "created_at", ""},
		{"null timestamp", edit(`"created_at": "2025-05-01T09:00:00Z"`, `"created_at": null`), "created_at", ""},
		{"unknown status", edit(`"status": "running"`, `"status": "sleeping"`), "status", invStatus},
		{"unknown gate", edit(`"max_ticks": null`, `"max_tick": 3`), "gates.max_tick", ""},
		{"negative gate", edit(`"max_ticks": null`, `"max_ticks": -3`), "gates.max_ticks", ""},
		{"checkpoint zero", edit(`"checkpoint_every": null`, `"checkpoint_every": 0`), "gates.checkpoint_every", ""},
		{"gate of wrong type", edit(`"budget": {"usd": null`, `"budget": {"usd": "5"`), "gates.budget.usd", ""},
		{"unknown nested key", edit(`"spent": {"usd": 0.0,`, `"spent": {"eur": 1, "usd": 0.0,`), "spent.eur", ""},
		{"negative spent", edit(`"spent": {"usd": 0.0,`, `"spent": {"usd": -1.0,`), "spent.usd", ""},
		{"empty template", edit(`"template": null`, `"template": ""`), "template", ""},
		{"pause while running", edit(`"pause": null`, `"pause": {"at": "2025-05-01T09:00:00Z", "by": "a", "reason": "b"}`), "pause", invPaused},
		{"halt of unknown gate", strings.Replace(edit(`"status": "running"`, `"status": "halted"`), `"halt": null`, `"halt": {"at": "2025-05-01T09:00:00Z", "gates": ["moon"], "reason": "", "tick": 0}`, 1), "halt.gates", invHalted},
		{"epoch spent above spent", edit(`"tick": 0, "spent": {"usd": 0.0`, `"tick": 0, "spent": {"usd": 1.0`), "epoch.spent", invEpochSpent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := codec{path: "/p/.state.loop"}.Decode([]byte(tc.doc))
			key, inv, ok := refusal(err)
			require.True(t, ok, "Decode(%s) = %v, want a *filetxn.FormatError", tc.name, err)
			require.Equal(t, tc.key, key, "Decode(%s) = %v: Key = %q, want %q", tc.name, err, key, tc.key)
			require.Equal(t, tc.inv, inv, "Decode(%s) = %v: invariant %q, want %q", tc.name, err, inv, tc.inv)
		})
	}
}

// TestEncodeRefusesABrokenDoc: Encode checks the invariants too, so a Doc
// edited into an invalid state is never written.
func TestEncodeRefusesABrokenDoc(t *testing.T) {
	d, _ := New("x", epoch0, Template{})
	d.Status = Paused
	_, err := (codec{path: "p"}).Encode(d)
	key, inv, _ := refusal(err)
	require.Equal(t, []string{"pause", invPaused}, []string{key, inv}, "Encode(paused without pause) = %v, want a *filetxn.FormatError at pause", err)
	d.Status = Running
	_, err = (codec{name: "y"}).Encode(d)
	key, inv, _ = refusal(err)
	require.Equal(t, []string{"name", invName}, []string{key, inv}, "Encode(name x into y) = %v, want a *filetxn.FormatError at name", err)
	_, err = (codec{name: "x", path: "/p/.state.loop"}).Decode(nil)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Decode(nil) = %v, want filetxn.ErrNotFound", err)
	require.Contains(t, err.Error(), "/p/.state.loop", "Decode(nil) = %v, want it to name the file", err)
}

// TestFloatsAndStringsRoundTrip: floats are written with the shortest
// digits and a ".0" on whole numbers, strings escape only what JSON needs,
// and both read back to the same values.
func TestFloatsAndStringsRoundTrip(t *testing.T) {
	for _, f := range []float64{0, 1, 0.1, 0.30000000000000004, 1.84, 3110.5, 1e20, 1e21, 1.5e-7, 123456789.125} {
		b, _ := number(f).MarshalJSON()
		d, _ := New("x", epoch0, Template{})
		d.Spent = Cost{USD: f}
		d2, err := codec{}.Decode([]byte(d.canonical()))
		if err != nil || d2.Spent.USD != f {
			t.Fatalf("float %v written as %s reads back as %v, %v", f, b, d2, err)
		}
	}
	if got, _ := number(5).MarshalJSON(); string(got) != "5.0" {
		t.Fatalf("number(5).MarshalJSON() = %s, want 5.0", got)
	}
	for _, s := range []string{"plain", `q"uote`, `back\slash`, "new\nline\ttab\x01", "ünï 中文 \u2028", "<&>"} {
		d, _ := New("x", epoch0, Template{Name: s})
		d2, err := codec{}.Decode([]byte(d.canonical()))
		if err != nil || d2.Template != s {
			t.Fatalf("template %q reads back as %q, %v", s, d2.Template, err)
		}
	}
	if got := string(appendLine(nil, "<&>\x7f")); got != "\"<&>\x7f\"" {
		t.Fatalf("appendLine(%q) = %s, want it unescaped", "<&>\x7f", got)
	}
}

// TestUnknownTopLevelKeysSurvive: unknown top-level keys are kept through a
// change, after the known ones, in file order.
func TestUnknownTopLevelKeysSurvive(t *testing.T) {
	d0, _ := New("x", epoch0, Template{})
	in := strings.Replace(d0.canonical(), "{\n", "{\n  \"z_new\": [1, {\"a\": null}],\n  \"a_new\": \"v\",\n", 1)
	d, err := codec{}.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.pause(epoch0.Add(time.Hour), "me", ""); err != nil {
		t.Fatal(err)
	}
	out, _ := codec{}.Encode(d)
	if !bytes.HasSuffix(out, []byte("  \"last_approval\": null,\n  \"z_new\": [1,{\"a\":null}],\n  \"a_new\": \"v\"\n}\n")) {
		t.Fatalf("unknown keys after a change:\n%s", out)
	}
}

// FuzzDecode: for any bytes, Decode does not panic; what it accepts
// encodes back to the input unchanged, passes Validate, and its canonical
// encoding decodes to a state whose canonical encoding is the same bytes.
func FuzzDecode(f *testing.F) {
	d, _ := New("x", epoch0, Template{Gates: Gates{MaxTicks: i64(2), ExpiresAt: tm(epoch0), TickTimeout: f64(1.5)}})
	f.Add([]byte(specExample))
	f.Add([]byte(specCanonical))
	f.Add([]byte(d.canonical()))
	d.pause(epoch0, "a\"b", "c\nd")
	f.Add([]byte(d.canonical()))
	d.Resume(epoch0)
	d.beginTick(epoch0, 42, "linux:boot:1234")
	f.Add([]byte(strings.Replace(d.canonical(), "\n}\n", ", \"x\": {\"k\": [1e3, \"\\u0041\"]}}", 1)))
	f.Add([]byte(`{"schema": 2}`))
	f.Add([]byte(`{"schema": 1, "schema": 1}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(strings.Replace(specExample, "1.84", "1.84e0", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := codec{}.Decode(data)
		if err != nil {
			if _, _, ok := refusal(err); !ok {
				t.Fatalf("Decode(%q) = %v, not a *filetxn.FormatError", data, err)
			}
			return
		}
		if err := d.validate(); err != nil {
			t.Fatalf("Decode(%q) accepted a state that fails Validate: %v", data, err)
		}
		if out, err := (codec{}).Encode(d); err != nil || !bytes.Equal(out, data) {
			t.Fatalf("Encode(Decode(%q)) = %q, %v, want the input", data, out, err)
		}
		canon := []byte(d.canonical())
		d2, err := codec{}.Decode(canon)
		if err != nil {
			t.Fatalf("Decode(canonical of %q) = %v\n%s", data, err, canon)
		}
		if again := d2.canonical(); again != string(canon) {
			t.Fatalf("canonical encoding is not stable:\n%s\nthen\n%s", canon, again)
		}
	})
}
