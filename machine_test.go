package filetxn

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// storeMachine checks Store against a plain model: a map, the digest of the
// last version this machine published, and the snapshots it took.
type storeMachine struct {
	path  string
	opts  []Option // the store's options, kept across Reopen
	s     *Store[*kv]
	model map[string]string
	owned []Digest          // digests of the versions this machine published
	snaps map[string][]byte // label -> bytes, for Restore
	rival bool              // a rival wrote since our last owned version
}

var keys = rapid.SampledFrom([]string{"a", "b", "c", "d"})

func (m *storeMachine) mutate(t *rapid.T, fn func(*kv) error) (Commit, error) {
	c, err := m.s.Mutate(context.Background(), fn)
	m.own(c)
	return c, err
}

// own records the version c published, if it published one: only bytes
// this machine wrote are its own, not bytes it merely read.
func (m *storeMachine) own(c Commit) {
	if d, ok := c.Digest(); ok {
		m.owned = append(m.owned, d)
		m.rival = false
	}
}

// Set puts one key through Mutate.
func (m *storeMachine) Set(t *rapid.T) {
	k, v := keys.Draw(t, "key"), rapid.StringMatching(`[a-z]{0,3}`).Draw(t, "value")
	c, err := m.mutate(t, func(d *kv) error { d.m[k] = v; return nil })
	if err != nil {
		t.Fatalf("Mutate(set %s=%s) = %v", k, v, err)
	}
	changed := m.model[k] != v || !hasKey(m.model, k)
	if c.Written != changed && !(len(m.model) == 0 && !changed) {
		t.Fatalf("Mutate(set %s=%s).Written = %v, want %v", k, v, c.Written, changed)
	}
	m.model[k] = v
}

// Batch sets and deletes several keys in one transaction.
func (m *storeMachine) Batch(t *rapid.T) {
	n := rapid.IntRange(0, 4).Draw(t, "n")
	ops := make([][2]string, n)
	for i := range ops {
		ops[i] = [2]string{keys.Draw(t, "key"), rapid.SampledFrom([]string{"", "x", "y"}).Draw(t, "value")}
	}
	if _, err := m.mutate(t, func(d *kv) error {
		for _, op := range ops {
			if op[1] == "" {
				delete(d.m, op[0])
			} else {
				d.m[op[0]] = op[1]
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("Mutate(batch) = %v", err)
	}
	for _, op := range ops {
		if op[1] == "" {
			delete(m.model, op[0])
		} else {
			m.model[op[0]] = op[1]
		}
	}
}

// Fail changes the document, then fails: nothing is written.
func (m *storeMachine) Fail(t *rapid.T) {
	errNo := errors.New("no")
	before, _ := os.ReadFile(m.path)
	c, err := m.s.Mutate(context.Background(), func(d *kv) error { d.m["zz"] = "never"; return errNo })
	if err != errNo || c.Written {
		t.Fatalf("Mutate(failing fn) = %+v, %v, want errNo and nothing written", c, err)
	}
	if after, _ := os.ReadFile(m.path); string(after) != string(before) {
		t.Fatalf("failing fn changed the file from %q to %q", before, after)
	}
}

// Probed runs a no-op or a change through MutateProbed.
func (m *storeMachine) Probed(t *rapid.T) {
	k := keys.Draw(t, "key")
	v, ok := m.model[k]
	if !ok || rapid.Bool().Draw(t, "change") {
		v = "p"
	}
	c, err := m.s.MutateProbed(context.Background(), func(d *kv) error { d.m[k] = v; return nil })
	if err != nil {
		t.Fatalf("MutateProbed(%s=%s) = %v", k, v, err)
	}
	m.own(c)
	m.model[k] = v
}

// Snapshot remembers the current bytes.
func (m *storeMachine) Snapshot(t *rapid.T) {
	b, err := readOrNil(m.path)
	if err != nil {
		t.Fatal(err)
	}
	m.snaps[rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "label")] = b
}

// Rival writes behind the machine's back (no lock needed: one goroutine).
func (m *storeMachine) Rival(t *rapid.T) {
	k := keys.Draw(t, "key")
	m.model[k] = "rival"
	b, _ := kvCodec{}.Encode(&kv{m: m.model})
	if err := os.WriteFile(m.path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Ownership is by digest: a rival that writes bytes we already own
	// has not diverged from us.
	m.rival = !slices.Contains(m.owned, digestOf(b))
}

// Restore puts a snapshot back, owning every version this machine wrote.
func (m *storeMachine) Restore(t *rapid.T) {
	if len(m.snaps) == 0 {
		t.Skip("no snapshot")
	}
	label := rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "label")
	snap, ok := m.snaps[label]
	if !ok {
		t.Skip("no such snapshot")
	}
	cur, _ := readOrNil(m.path)
	_, err := m.s.Restore(context.Background(), snap, m.owned...)
	switch {
	case string(cur) == string(snap) && (cur == nil) == (snap == nil):
		if err != nil {
			t.Fatalf("Restore(equal snapshot) = %v", err)
		}
	case m.rival:
		if !errors.Is(err, ErrDiverged) {
			t.Fatalf("Restore over a rival's write = %v, want ErrDiverged", err)
		}
	default:
		if err != nil {
			t.Fatalf("Restore over an owned version = %v", err)
		}
		d, _ := kvCodec{}.Decode(snap)
		m.model = d.m
		m.owned = append(m.owned, digestOf(snap))
		m.rival = false
	}
}

// Reopen drops every in-memory value and starts from the file.
func (m *storeMachine) Reopen(t *rapid.T) {
	m.s = must(NewStore[*kv](m.path, kvCodec{}, m.opts...))
}

// Check lists the invariants.
func (m *storeMachine) Check(t *rapid.T) {
	d, err := m.s.View(context.Background())
	// 1. The file always decodes.
	if err != nil {
		t.Fatalf("View() = %v", err)
	}
	// 2. It holds exactly the model.
	if !maps.Equal(d.m, m.model) {
		t.Fatalf("View() = %v, want model %v", d.m, m.model)
	}
	// 3. No temp file is left behind.
	ents, _ := os.ReadDir(filepath.Dir(m.path))
	for _, e := range ents {
		if n := e.Name(); n != filepath.Base(m.path) && n != filepath.Base(m.path)+".lock" {
			t.Fatalf("stray file %s beside the data", n)
		}
	}
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// TestStoreStateMachine runs random sequences of transactions, failures,
// rival writes, restores and reopens against the model. Only versions the
// machine published are its own: a no-op transaction after a rival's write
// does not make the rival's bytes restorable over. Ablations: writing when
// fn fails, restoring without the ownership check, or a Commit.Digest that
// reports the bytes read by a no-op, turn it red.
func TestStoreStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp(t.TempDir(), "m")
		if err != nil {
			rt.Fatal(err)
		}
		path := filepath.Join(dir, "state.json")
		opts := []Option{WithoutSync()}
		m := &storeMachine{path: path, opts: opts, s: must(NewStore[*kv](path, kvCodec{}, opts...)), model: map[string]string{}, snaps: map[string][]byte{}}
		rt.Repeat(rapid.StateMachineActions(m))
	})
}
