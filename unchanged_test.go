package filetxn

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// TestNoOpLeavesAFileItWouldSpellOtherwiseAlone: counterCodec writes
// "<n>\n", and reads a file spelled otherwise ("  7 \n\n", say); a Mutate or
// MutateProbed whose fn changes nothing, or changes and restores the count,
// writes nothing and leaves that spelling, because the store compares the
// encodings before and after fn, not the encoding with the bytes read.
// Ablations: step taking the bytes read as the encoding before the first fn
// and the baseline (as the store did when codecs had to give back the bytes
// decoded) rewrites the file; the probe comparing its encoding with the
// bytes read sends the busy-lock no-op to the lock (which the test's
// goroutine holds: an error); each turns this test red.
func TestNoOpLeavesAFileItWouldSpellOtherwiseAlone(t *testing.T) {
	const spelled = "  7 \n\n"
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "count")
	require.NoError(t, os.WriteFile(path, []byte(spelled), 0o644))
	s := must(NewStore[*counter](path, counterCodec{}))
	for name, fn := range map[string]func(*counter) error{
		"nothing":            func(*counter) error { return nil },
		"changes and undoes": func(c *counter) error { c.n++; c.n--; return nil },
		"sets what is there": func(c *counter) error { c.n = 7; return nil },
	} {
		for _, probed := range []bool{false, true} {
			mutate := s.Mutate
			if probed {
				mutate = s.MutateProbed
			}
			c, err := mutate(ctx, fn)
			require.NoError(t, err, "Mutate(%s), probed %v", name, probed)
			require.False(t, c.Written, "Mutate(%s), probed %v = written, want nothing written", name, probed)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, spelled, string(got), "file after Mutate(%s), probed %v", name, probed)
		}
	}
	// The lock-free probe of a MutateProbed on a busy lock decides the same.
	lp, err := s.LockPath()
	require.NoError(t, err)
	h, err := lock.Acquire(ctx, lp)
	require.NoError(t, err)
	c, err := s.MutateProbed(ctx, func(c *counter) error { c.n = 7; return nil })
	h.Release()
	require.NoError(t, err, "MutateProbed(no-op) on a busy lock")
	require.False(t, c.Written, "MutateProbed(no-op) on a busy lock = written, want nothing written")

	c, err = s.Mutate(ctx, func(c *counter) error { c.n++; return nil })
	require.NoError(t, err)
	require.True(t, c.Written, "Mutate(increment) = not written, want written")
	got, _ := os.ReadFile(path)
	require.Equal(t, "8\n", string(got), "file after Mutate(increment)")
}

// TestMutateGroupUndoesAFailedFirstFnFromTheBaseline: behind a leader that
// changes nothing, a batch whose first fn changes the document and fails,
// and whose second changes nothing, writes nothing: the failed change is
// undone by decoding the baseline (the encoding of the document as read),
// and the no-op after it is told from that baseline, not from the file's
// own spelling, which stays. Ablations: step leaving the document fresh
// after the failed fn (its change leaks into a write), or taking the bytes
// read as the encoding before the first fn (the no-op rewrites the file in
// the codec's spelling), each turn it red.
func TestMutateGroupUndoesAFailedFirstFnFromTheBaseline(t *testing.T) {
	const spelled = "{ }"
	s, ctx, writes := groupStore(t)
	require.NoError(t, os.WriteFile(s.path, []byte(spelled), 0o644))
	queued := watchQueue(t)
	inside, rel := make(chan struct{}), make(chan struct{})
	leader := start(s, ctx, func(*kv) error { close(inside); <-rel; return nil })
	within(t, inside, "the leader's fn to run")
	errBoom := errors.New("boom")
	f := follow(t, s, ctx, queued, func(d *kv) error { d.m["failed"] = "1"; return errBoom })
	n := follow(t, s, ctx, queued, func(*kv) error { return nil })
	close(rel)
	for name, ch := range map[string]<-chan outcome{"the leader": leader, "the no-op": n} {
		o := within(t, ch, name)
		require.True(t, o.returned && o.err == nil && !o.commit.Written, "%s's Mutate = %+v, want nothing written, nil", name, o)
	}
	o := within(t, f, "the failing call")
	require.Same(t, errBoom, o.err, "failing Mutate = %v, want its fn's error itself", o.err)
	require.Equal(t, int64(0), writes.Load(), "renames = %d, want 0", writes.Load())
	got, err := os.ReadFile(s.path)
	require.NoError(t, err)
	require.Equal(t, spelled, string(got), "file after the batch")
}

// noted is a count with the comment lines of its file, which the
// document does not hold: "# ..." lines, then the count.
type notedCodec struct{}

func (notedCodec) Decode(data []byte) (*counter, error) {
	return counterCodec{}.Decode(data[len(notes(data)):])
}

func (notedCodec) Encode(c *counter) ([]byte, error) { return counterCodec{}.Encode(c) }

// Rewrite writes the comment lines of read before the count.
func (notedCodec) Rewrite(c *counter, read []byte) ([]byte, error) {
	out, err := counterCodec{}.Encode(c)
	return append(bytes.Clone(notes(read)), out...), err
}

// notes returns the leading comment lines of data.
func notes(data []byte) []byte {
	n := 0
	for strings.HasPrefix(string(data[n:]), "#") {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			return data
		}
		n += i + 1
	}
	return data[:n]
}

// TestRewriterKeepsWhatTheDocumentDoesNotHold: a store whose codec is a
// Rewriter writes through Rewrite, given the bytes the document was decoded
// from: the file's comment lines survive a change, and a change after a
// failed fn of the same batch (whose undo decodes the encoding before it)
// and a no-op, which writes nothing. Ablation: encode calling Encode even
// for a Rewriter loses the comments, and this test goes red.
func TestRewriterKeepsWhatTheDocumentDoesNotHold(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "count")
	require.NoError(t, os.WriteFile(path, []byte("# the count of runs\n# by hand\n7\n"), 0o644))
	s := must(NewStore[*counter](path, notedCodec{}))
	var _ Rewriter[*counter] = notedCodec{}
	c, err := s.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err)
	require.False(t, c.Written, "Mutate(no-op) = written, want nothing written")
	c, err = s.Mutate(ctx, func(c *counter) error { c.n++; return nil })
	require.NoError(t, err)
	require.True(t, c.Written, "Mutate(increment) = not written, want written")
	got, _ := os.ReadFile(path)
	require.Equal(t, "# the count of runs\n# by hand\n8\n", string(got), "file after Mutate(increment)")

	// The same through a batch, behind a leader that changes nothing: a
	// failed fn, then a change.
	queued := watchQueue(t)
	inside, rel := make(chan struct{}), make(chan struct{})
	leader := goMutate(func() (Commit, error) {
		return s.Mutate(ctx, func(*counter) error { close(inside); <-rel; return nil })
	})
	within(t, inside, "the leader's fn to run")
	f := goMutate(func() (Commit, error) {
		return s.Mutate(ctx, func(c *counter) error { c.n = 100; return errors.New("boom") })
	})
	within(t, queued, "the failing call to queue")
	add := goMutate(func() (Commit, error) { return s.Mutate(ctx, func(c *counter) error { c.n += 2; return nil }) })
	within(t, queued, "the increment to queue")
	close(rel)
	within(t, leader, "the leader")
	require.Error(t, within(t, f, "the failing call").err, "failing Mutate, want its error")
	o := within(t, add, "the increment")
	require.True(t, o.err == nil && o.commit.Written, "Mutate(add 2) = %+v, want written", o)
	got, _ = os.ReadFile(path)
	require.Equal(t, "# the count of runs\n# by hand\n10\n", string(got), "file after a failed fn and an increment by 2")
}

// TestDecodeTellsAMissingFileFromAnEmptyOne: Decode gets nil for a missing
// file and a non-nil empty slice for an empty one, in a Mutate and in a
// View; an Encode that returns nothing for a file that exists makes it
// empty, and never removes it. Ablation: readState giving nil for an empty
// file turns it red.
func TestDecodeTellsAMissingFileFromAnEmptyOne(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f")
	s := must(NewStore[*[]byte](path, bytesCodec{}))
	for _, tt := range []struct {
		name    string
		missing bool
	}{{"missing", true}, {"empty", false}} {
		if !tt.missing {
			require.NoError(t, os.WriteFile(path, nil, 0o644))
		}
		var gotNil bool
		_, err := s.Mutate(ctx, func(b *[]byte) error { gotNil = *b == nil; return nil })
		require.NoError(t, err, "Mutate on a %s file", tt.name)
		require.Equal(t, tt.missing, gotNil, "Decode's data for a %s file is nil = got, want", tt.name)
		d, err := s.View(ctx)
		require.NoError(t, err, "View of a %s file", tt.name)
		require.Equal(t, tt.missing, *d == nil, "View: Decode's data for a %s file is nil = got, want", tt.name)
	}
	require.NoError(t, os.WriteFile(path, []byte("x\n"), 0o644))
	c, err := s.Mutate(ctx, func(b *[]byte) error { *b = nil; return nil })
	require.NoError(t, err)
	require.True(t, c.Written, "Mutate(encode nothing) over %q = not written, want written", "x\n")
	fi, err := os.Stat(path)
	require.NoError(t, err, "the file after an Encode of nothing, want it kept")
	require.Zero(t, fi.Size(), "size after an Encode of nothing")
}

// logDoc is a log kept as the bytes Decode was given, to which fn appends
// in place when there is room after them.
type logDoc struct{ b []byte }

// logCodec records the data each Decode is given in seen, if not nil.
type logCodec struct{ seen *[][]byte }

func (c logCodec) Decode(data []byte) (*logDoc, error) {
	if c.seen != nil {
		*c.seen = append(*c.seen, data)
	}
	return &logDoc{data}, nil
}

func (logCodec) Encode(d *logDoc) ([]byte, error) { return d.b, nil }

// TestBatchDecodesWhatItPublishedWithItsRoom: when the file holds what a
// batch of the store published last, the next batch's Decode is given those
// very bytes, with the room after them (so a codec that appends does so in
// place, with no copy), a View's Decode the same bytes without the room, and
// once another writer has changed the file, a new array. Ablations: readDoc
// never handing back the bytes published (always a copy) fails the first
// check; handing the room to a View too fails the second.
func TestBatchDecodesWhatItPublishedWithItsRoom(t *testing.T) {
	ctx := context.Background()
	var seen [][]byte
	s := must(NewStore[*logDoc](filepath.Join(t.TempDir(), "log"), logCodec{&seen}, WithoutSync()))
	add := func(line string) func(*logDoc) error {
		return func(d *logDoc) error { d.b = append(d.b, line...); return nil }
	}
	_, err := s.Mutate(ctx, add("a\n"))
	require.NoError(t, err)
	published := *s.last.Load()
	_, err = s.Mutate(ctx, add("b\n"))
	require.NoError(t, err)
	got := seen[len(seen)-1]
	require.True(t, len(got) > 0 && &got[0] == &published[0] && cap(got) > len(got),
		"Decode's data after the store's own write = %q (cap %d), want the bytes published, %q, with room after them", got, cap(got), published)

	_, err = s.View(ctx)
	require.NoError(t, err)
	got, published = seen[len(seen)-1], *s.last.Load()
	require.True(t, &got[0] == &published[0] && cap(got) == len(got),
		"View's data = %q (cap %d), want the bytes published, %q, without room", got, cap(got), published)

	require.NoError(t, os.WriteFile(s.path, []byte("a\nz\n"), 0o644)) // another writer
	_, err = s.Mutate(ctx, add("c\n"))
	require.NoError(t, err)
	got = seen[len(seen)-1]
	require.True(t, string(got) == "a\nz\n" && &got[0] != &published[0], "Decode's data after another writer = %q, want %q in a new array", got, "a\nz\n")
}

// TestRoomAfterThePublishedBytesGoesToOneDocument: a caller's document from
// View that grows after a batch has appended in the room after what the
// store published before changes nothing the store published: the file and
// the batch's Commit.Digest still agree. Ablation: readDoc handing the room
// to a View too lets the View's append overwrite the batch's bytes in place
// (the Commit's digest is then that of bytes nobody wrote), and this test
// goes red.
func TestRoomAfterThePublishedBytesGoesToOneDocument(t *testing.T) {
	ctx := context.Background()
	s := must(NewStore[*logDoc](filepath.Join(t.TempDir(), "log"), logCodec{}, WithoutSync()))
	add := func(line string) func(*logDoc) error {
		return func(d *logDoc) error { d.b = append(d.b, line...); return nil }
	}
	_, err := s.Mutate(ctx, add("a\n"))
	require.NoError(t, err)
	v, err := s.View(ctx)
	require.NoError(t, err)
	c, err := s.Mutate(ctx, add("b\n"))
	require.NoError(t, err)
	v.b = append(v.b, "view\n"...) // the caller's own document
	data, err := os.ReadFile(s.path)
	require.NoError(t, err)
	d, ok := c.Digest()
	require.True(t, ok && d == digestOf(data), "Commit.Digest() of the append = %x, %v; want the file's %x", d, ok, digestOf(data))
	require.Equal(t, "a\nb\n", string(*s.last.Load()), "the bytes the store published last, after the View's document grew")
}
