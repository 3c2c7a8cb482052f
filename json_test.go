package filetxn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/filetxntest"
	"github.com/filetxn/filetxn/internal/testkit"
)

// handFormatted is a queue file as a person might write it: tabs, keys out
// of order, no final newline.
const handFormatted = "{\"jobs\":[\n\t{\"task\":\"a\", \"id\":0, \"state\":\"queued\"}\n],\n\"next\" : 1}"

func isFormatError(err error) bool {
	var je *filetxn.FormatError
	return errors.As(err, &je)
}

// TestJSONKeepsTheCodecContract runs the contract checks of filetxntest on
// the JSON codec, with and without KeepUnknownFields.
func TestJSONKeepsTheCodecContract(t *testing.T) {
	valid := [][]byte{
		[]byte(handFormatted),
		[]byte(`{"next":0,"jobs":[]}`),
		[]byte("{\n  \"next\": 1,\n  \"jobs\": [\n    {\n      \"id\": 0,\n      \"task\": \"caf\\u00e9 <&>\",\n      \"state\": \"done\"\n    }\n  ]\n}\n"),
		[]byte("null"),
		[]byte("{}"),
		{},
	}
	invalid := [][]byte{
		[]byte(`{"next": 1,`),
		[]byte(`{"next": "one"}`),
		[]byte(`{"next": 1, "jbos": []}`),
		[]byte(`{"jobs": [{"id": 1, "taks": "x"}]}`),
		[]byte(`{} {}`),
		[]byte(`[1]`),
		[]byte(" "),
	}
	edit := func(q *Queue) { _ = enqueue("edited")(q) }
	filetxntest.CheckCodec(t, filetxn.JSON[Queue](), filetxntest.CodecCases[*Queue]{
		Valid: valid, Invalid: invalid, IsRefusal: isFormatError, Edit: edit,
	})
	filetxntest.CheckCodec(t, filetxn.JSON[Queue](filetxn.KeepUnknownFields()), filetxntest.CodecCases[*Queue]{
		Valid: append(valid,
			[]byte(`{"next": 1, "owner": {"team": "ops"}, "jobs": []}`),
			[]byte("{\"jbos\": [1, 2],\n\"x\\\"y\": null}"),
		),
		Invalid:   append(invalid[:2:2], invalid[3:]...), // a top-level unknown field is kept
		IsRefusal: isFormatError,
		Edit:      edit,
	})
}

// TestJSONNoOpRewritesNothing checks that a transaction that changes nothing
// leaves a hand-formatted file alone, byte for byte (one with a key that T
// lacks too, under KeepUnknownFields), and writes nothing where there was no
// file. Ablation: the store comparing the encoding after fn with the bytes
// read, not with the encoding of the document as decoded, makes it red.
func TestJSONNoOpRewritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "queue.json")
	s := must(filetxn.NewStore(path, filetxn.JSON[Queue]()))

	c, err := s.Mutate(ctx, func(*Queue) error { return nil })
	require.NoError(t, err)
	require.False(t, c.Written, "Mutate(no-op) on a missing file = written, want nothing written")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "Mutate(no-op) on a missing file created it")

	require.NoError(t, os.WriteFile(path, []byte(handFormatted), 0o644))
	for _, probed := range []bool{false, true} {
		var c filetxn.Commit
		if probed {
			c, err = s.MutateProbed(ctx, func(q *Queue) error { q.Next = 1; return nil })
		} else {
			c, err = s.Mutate(ctx, func(q *Queue) error { q.Jobs[0].State = "queued"; return nil })
		}
		require.NoError(t, err)
		require.False(t, c.Written, "Mutate(set what is there, probed %v) = written, want nothing written", probed)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, handFormatted, string(got), "file after a no-op (probed %v)", probed)
	}

	const unknown = "{\"owner\" : {\"team\":\"ops\"},\n\t\"next\": 1}"
	require.NoError(t, os.WriteFile(path, []byte(unknown), 0o644))
	keep := must(filetxn.NewStore(path, filetxn.JSON[Queue](filetxn.KeepUnknownFields())))
	c, err = keep.Mutate(ctx, func(q *Queue) error { q.Next = 1; return nil })
	require.NoError(t, err)
	require.False(t, c.Written, "Mutate(set what is there) with KeepUnknownFields = written, want nothing written")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, unknown, string(got), "file after a no-op with KeepUnknownFields")
}

// TestJSONChangedDocumentIsIndented checks the format of a changed document:
// encoding/json's, indented by two spaces, a final newline, no HTML escapes.
func TestJSONChangedDocumentIsIndented(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.json")
	require.NoError(t, os.WriteFile(path, []byte(handFormatted), 0o644))
	s := must(filetxn.NewStore(path, filetxn.JSON[Queue]()))
	c, err := s.Mutate(context.Background(), enqueue("<b> & </b>"))
	require.NoError(t, err)
	require.True(t, c.Written, "Mutate(enqueue) = not written, want written")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want := `{
  "next": 2,
  "jobs": [
    {
      "id": 0,
      "task": "a",
      "state": "queued"
    },
    {
      "id": 1,
      "task": "<b> & </b>",
      "state": "queued"
    }
  ]
}
`
	require.Equal(t, want, string(got), "file after Mutate(enqueue)")
}

// TestJSONRefusesWhatItDoesNotUnderstand checks that a file that is not
// JSON for the document's type is refused with the path, line and column of
// the fault, that fn never runs, and that the file is left as it was.
// Ablation: dropping the unknown-field walk (checkFields) makes the two
// unknown-field cases red, reporting the type error's raw offset (the
// end of the value) makes "wrong type" red, and an unknown field's Key
// without the keys above it makes "unknown nested field" red.
func TestJSONRefusesWhatItDoesNotUnderstand(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		line, col int
		key       string
		msg       string
	}{
		{"syntax", "{\"next\": 1,\n \"jobs\": [}", 2, 11, "", "invalid character '}'"},
		{"truncated", `{"next": 1`, 1, 11, "", "unexpected end of JSON input"},
		{"trailing value", `{} {}`, 1, 4, "", "after top-level value"},
		{"wrong type", `{"next": "one"}`, 1, 10, "next", "cannot unmarshal string"},
		{"wrong nested type", `{"jobs": [{"id": "1"}]}`, 1, 18, "jobs.id", "cannot unmarshal string"},
		{"array for an object", "\n\n  [1]", 3, 3, "", "cannot unmarshal array"},
		{"unknown field", "{\n  \"next\": 1,\n  \"jbos\": []\n}", 3, 3, "jbos", `unknown field "jbos"`},
		{"unknown nested field", `{"jobs": [{"id": 1, "taks": "x"}]}`, 1, 21, "jobs.taks", `unknown field "taks"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "queue.json")
			require.NoError(t, os.WriteFile(path, []byte(tt.data), 0o644))
			s := must(filetxn.NewStore(path, filetxn.JSON[Queue]()))
			ran := false
			_, err := s.Mutate(context.Background(), func(*Queue) error { ran = true; return nil })
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe, "Mutate(%q) = %v, want an *fs.PathError", tt.data, err)
			require.Equal(t, path, pe.Path, "Mutate(%q): PathError.Path", tt.data)
			var je *filetxn.FormatError
			require.ErrorAs(t, err, &je, "Mutate(%q) = %v, want a *filetxn.FormatError", tt.data, err)
			require.Equal(t, [2]int{tt.line, tt.col}, [2]int{je.Line, je.Column}, "Mutate(%q) = %v: line and column", tt.data, err)
			require.Equal(t, tt.key, je.Key, "Mutate(%q) = %v: Key", tt.data, err)
			require.ErrorContains(t, err, tt.msg, "Mutate(%q)", tt.data)
			require.False(t, ran, "Mutate(%q) ran fn, want it refused before", tt.data)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tt.data, string(got), "file after a refused Mutate")
		})
	}
}

// TestJSONKeepUnknownFieldsRoundTripsTopLevelKeys checks that with
// KeepUnknownFields the top-level keys the type does not know survive a
// change, with their values, after the known ones, while an unknown key
// deeper down is still refused. Ablation: not appending the kept keys in
// compactJSON makes it red.
func TestJSONKeepUnknownFieldsRoundTripsTopLevelKeys(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "queue.json")
	orig := "{\"owner\": {\"team\": \"ops\", \"on call\": [1, 2]},\n \"next\": 0, \"jobs\": [], \"x\\\"y\": null}"
	require.NoError(t, os.WriteFile(path, []byte(orig), 0o644))
	s := must(filetxn.NewStore(path, filetxn.JSON[Queue](filetxn.KeepUnknownFields())))

	c, err := s.Mutate(ctx, enqueue("a"))
	require.NoError(t, err)
	require.True(t, c.Written, "Mutate(enqueue) = not written, want written")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want := `{
  "next": 1,
  "jobs": [
    {
      "id": 0,
      "task": "a",
      "state": "queued"
    }
  ],
  "owner": {
    "team": "ops",
    "on call": [
      1,
      2
    ]
  },
  "x\"y": null
}
`
	require.Equal(t, want, string(got), "file after Mutate(enqueue) with KeepUnknownFields")

	c, err = s.Mutate(ctx, func(*Queue) error { return nil })
	require.NoError(t, err)
	require.False(t, c.Written, "Mutate(no-op) after the rewrite = written, want nothing written")

	nested := `{"jobs": [{"id": 1, "taks": "x"}]}`
	require.NoError(t, os.WriteFile(path, []byte(nested), 0o644))
	_, err = s.Mutate(ctx, func(*Queue) error { return nil })
	require.True(t, isFormatError(err), "Mutate(%q) with KeepUnknownFields = %v, want a *filetxn.FormatError", nested, err)
}

// TestJSONQueueRaceLosesNothing runs 4 processes that each, 10 times,
// enqueue a job, claim the oldest queued one and complete it, each step its
// own transaction on one JSON file. At the end every job is there once,
// with a distinct ID, and done. Ablation: the codec's Encode giving back the
// bytes read whenever it knows the document, changed or not, makes it red
// (no step is ever written).
func TestJSONQueueRaceLosesNothing(t *testing.T) {
	filetxntest.CheckRace(t, filetxntest.Race{
		Procs: 4,
		Txns:  10,
		Step: func(ctx context.Context, dir string, proc, txn int) error {
			s := must(filetxn.NewStore(filepath.Join(dir, "queue.json"), filetxn.JSON[Queue]()))
			worker := fmt.Sprintf("worker-%d", proc)
			if _, err := s.Mutate(ctx, enqueue(fmt.Sprintf("task %d.%d", proc, txn))); err != nil {
				return err
			}
			var job Job
			if _, err := s.Mutate(ctx, claim(worker, &job)); err != nil {
				return err // never errNoJob: this process has just enqueued one
			}
			_, err := s.Mutate(ctx, complete(job.ID))
			return err
		},
		Invariant: func(dir string, procs, txns int) error {
			q, err := must(filetxn.NewStore(filepath.Join(dir, "queue.json"), filetxn.JSON[Queue]())).View(context.Background())
			if err != nil {
				return err
			}
			n := procs * txns
			var faults []string
			if q.Next != n || len(q.Jobs) != n {
				faults = append(faults, fmt.Sprintf("next = %d and %d jobs, want %d and %d", q.Next, len(q.Jobs), n, n))
			}
			tasks := map[string]bool{}
			for i, j := range q.Jobs {
				if j.ID != i || j.State != "done" || j.Worker == "" || tasks[j.Task] {
					faults = append(faults, fmt.Sprintf("jobs[%d] = %+v, want ID %d, done by a worker, a task of its own", i, j, i))
				}
				tasks[j.Task] = true
			}
			if len(faults) > 0 {
				return errors.New(strings.Join(faults, "; "))
			}
			return nil
		},
	})
}

// TestJSONKeepsNumbersExactly checks that a number in a field of interface
// type keeps its digits through a change elsewhere in the document.
// Ablation: decoding without UseNumber (numbers as float64) makes it red:
// 2^63-1 is written back as 9223372036854775807 rounded.
func TestJSONKeepsNumbersExactly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"id": 9223372036854775807, "ratio": 0.1000000000000000055511151231257827}`), 0o644))
	s := must(filetxn.NewStore(path, filetxn.JSON[map[string]any]()))
	_, err := s.Mutate(context.Background(), func(m *map[string]any) error { (*m)["seen"] = true; return nil })
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want := "{\n  \"id\": 9223372036854775807,\n  \"ratio\": 0.1000000000000000055511151231257827,\n  \"seen\": true\n}\n"
	require.Equal(t, want, string(got), "file after Mutate(set seen)")
}

// FuzzJSON checks, for any file, that the JSON codec either refuses it with
// a *FormatError whose line and column lie within the file, or decodes it to a
// document whose encoding reads back to a document that encodes the same
// (so that a no-op writes nothing and a failed fn is undone), unchanged and
// changed, and, with KeepUnknownFields, keeps the unknown keys of the file
// (a key that names a field of Queue in another case, such as "neXt", is
// the field's, as encoding/json decodes it, and is written as "next").
func FuzzJSON(f *testing.F) {
	for _, seed := range []string{handFormatted, `{"next": 1, "jbos": []}`, `{"jobs": [{"id": 1, "taks": "x"}]}`,
		"{\"next\": \"one\"}", "[1]", "{} {}", "{\"next\": 1,\n \"jobs\": [}", "\"\\\"\"", "{\"x\\\"y\": 1}"} {
		f.Add([]byte(seed))
	}
	codecs := []filetxn.Codec[*Queue]{filetxn.JSON[Queue](), filetxn.JSON[Queue](filetxn.KeepUnknownFields())}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range codecs {
			doc, err := c.Decode(data)
			if err != nil {
				var je *filetxn.FormatError
				require.ErrorAs(t, err, &je, "Decode(%q) = %v, want a *filetxn.FormatError", data, err)
				lines := 1 + strings.Count(string(data), "\n")
				require.True(t, je.Line >= 1 && je.Line <= lines && je.Column >= 1 && je.Column <= len(data)+1,
					"Decode(%q) = %v: position outside the file (%d lines)", data, err, lines)
				continue
			}
			for _, edit := range []bool{false, true} {
				if edit {
					_ = enqueue("fuzz")(doc)
				}
				out, err := encodeOver(c, doc, data)
				require.NoError(t, err, "Encode(Decode(%q)), edited %v", data, edit)
				again, err := c.Decode(out)
				require.NoError(t, err, "Decode(Encode(Decode(%q))) of %q, edited %v", data, out, edit)
				out2, err := encodeOver(c, again, out)
				require.NoError(t, err)
				require.Equal(t, string(out), string(out2), "Encode(Decode(%q)) of the codec's own output", out)
				if _, keeps := c.(filetxn.Rewriter[*Queue]); keeps {
					var in, kept map[string]json.RawMessage
					if json.Unmarshal(data, &in) == nil && json.Unmarshal(out, &kept) == nil {
						for k := range in {
							if strings.EqualFold(k, "next") || strings.EqualFold(k, "jobs") {
								continue // a field of Queue, matched as encoding/json matches keys (any case), written as its own name
							}
							_, ok := kept[k]
							require.True(t, ok, "Rewrite(Decode(%q)) = %q, lost the key %q", data, out, k)
						}
					}
				}
			}
		}
	})
}

// encodeOver encodes doc as a store does: through Rewrite, with the bytes
// doc was decoded from, for a Rewriter.
func encodeOver(c filetxn.Codec[*Queue], doc *Queue, read []byte) ([]byte, error) {
	if r, ok := c.(filetxn.Rewriter[*Queue]); ok {
		return r.Rewrite(doc, read)
	}
	return c.Encode(doc)
}

// Base is embedded in tagged, to test promoted fields.
type Base struct {
	Created string `json:"created"`
}

// tagged has the kinds of fields encoding/json treats specially.
type tagged struct {
	Base                   // promoted: "created" is a key of tagged
	Name   string          `json:"name,omitempty"`
	Hidden string          `json:"-"`
	Plain  int             // the key "Plain", any case
	Nested *Base           `json:"nested"`
	Raw    json.RawMessage `json:"raw"` // anything goes inside
	Any    any             `json:"any"`
	ByKey  map[string]Base `json:"by_key"`
}

// TestJSONKnowsTheFieldsEncodingJSONKnows checks that the unknown-field
// check takes a key as encoding/json would: promoted fields of embedded
// structs, tag names, "-" (left out), keys matched
// whatever their case, and values the type decodes itself or takes as they
// are. Ablation: not promoting the fields of embedded structs makes
// "promoted" red.
func TestJSONKnowsTheFieldsEncodingJSONKnows(t *testing.T) {
	tests := []struct {
		name, data string
		known      bool
	}{
		{"promoted", `{"created": "today"}`, true},
		{"tag name", `{"name": "x"}`, true},
		{"field name under a tag", `{"Name": "x"}`, true}, // case-insensitive match of "name"
		{"any case", `{"PLAIN": 1, "plain": 2}`, true},
		{"left out", `{"Hidden": "x"}`, false},
		{"embedded struct itself", `{"Base": {}}`, false},
		{"nested", `{"nested": {"created": "x"}}`, true},
		{"nested unknown", `{"nested": {"name": "x"}}`, false},
		{"raw value", `{"raw": {"whatever": [1, {"x": 2}]}}`, true},
		{"interface value", `{"any": {"whatever": 1}}`, true},
		{"map values", `{"by_key": {"a": {"created": "x"}}}`, true},
		{"map value unknown", `{"by_key": {"a": {"name": "x"}}}`, false},
	}
	c := filetxn.JSON[tagged]()
	for _, tt := range tests {
		_, err := c.Decode([]byte(tt.data))
		if tt.known {
			require.NoError(t, err, "%s: Decode(%q)", tt.name, tt.data)
		} else {
			require.ErrorContains(t, err, "unknown field", "%s: Decode(%q) = %v, want an unknown field", tt.name, tt.data, err)
		}
	}
}

// TestJSONCodecIsSafeForConcurrentUse: the godoc says the codec is safe for
// concurrent use, as a Codec shared by stores must be. Goroutines that
// decode, change and encode documents through one codec at once each get
// back their own document, unchanged and changed. Ablation: jsonFields.of
// without its mutex makes it red under -race, in most runs (a data race on
// the codec's map of known struct fields, which only the workers' first
// calls write: they start at once).
func TestJSONCodecIsSafeForConcurrentUse(t *testing.T) {
	codec := filetxn.JSON[Queue]()
	const workers, rounds = 4, 200
	errs := make(chan error, workers)
	begin := make(chan struct{}) // the workers' first calls, which fill the codec's memory of T's fields, at once
	for w := range workers {
		go func() {
			data := []byte(fmt.Sprintf("{\"next\": %d, \"jobs\": []}", w))
			<-begin
			for range rounds {
				q, err := codec.Decode(data)
				if err != nil {
					errs <- err
					return
				}
				want := fmt.Sprintf("{\n  \"next\": %d,\n  \"jobs\": []\n}\n", w)
				if out, err := codec.Encode(q); err != nil || string(out) != want {
					errs <- fmt.Errorf("Encode(unchanged) = %q, %v, want %q", out, err, want)
					return
				}
				q.Next += workers
				if out, err := codec.Encode(q); err != nil || !strings.Contains(string(out), fmt.Sprintf("\"next\": %d,", w+workers)) {
					errs <- fmt.Errorf("Encode(next = %d) = %q, %v, want that next", w+workers, out, err)
					return
				}
			}
			errs <- nil
		}()
	}
	close(begin)
	for range workers {
		require.NoError(t, testkit.Recv(t, errs, "a worker's rounds"), "a worker decoding and encoding through the shared codec")
	}
}
