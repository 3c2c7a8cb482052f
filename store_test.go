package filetxn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

func newCounter(t *testing.T, opts ...Option) *Store[*counter] {
	t.Helper()
	return must(NewStore[*counter](filepath.Join(t.TempDir(), "count.txt"), counterCodec{}, opts...))
}

func readCount(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMutateWritesOnlyWhenBytesChange(t *testing.T) {
	ctx := context.Background()
	s := newCounter(t)
	c, err := s.Mutate(ctx, func(c *counter) error { return nil })
	if err != nil || c.Written {
		t.Fatalf("Mutate(no change, missing file) = %+v, %v, want nothing written", c, err)
	}
	if _, err := os.Stat(s.path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no-op Mutate created the file: %v", err)
	}
	c, err = s.Mutate(ctx, func(c *counter) error { c.n = 7; return nil })
	if err != nil || !c.Written || sum(c) != digestOf([]byte("7\n")) {
		t.Fatalf("Mutate(set 7) = %+v, %v, want written with the digest of %q", c, err, "7\n")
	}
	before, _ := os.Stat(s.path)
	c, err = s.Mutate(ctx, func(c *counter) error { c.n = 7; return nil })
	if _, owned := c.Digest(); err != nil || c.Written || owned {
		t.Fatalf("Mutate(same value) = %+v, %v, want nothing written and no digest", c, err)
	}
	after, _ := os.Stat(s.path)
	if !os.SameFile(before, after) {
		t.Errorf("Mutate(same value) replaced the file")
	}
}

func TestMutateReturnsFnErrorUnchanged(t *testing.T) {
	ctx := context.Background()
	s := newCounter(t)
	if _, err := s.Mutate(ctx, func(c *counter) error { c.n = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	c, err := s.Mutate(ctx, func(c *counter) error { c.n = 99; return errBoom })
	if err != errBoom || c.Written {
		t.Fatalf("Mutate(fn fails) = %+v, %v, want the fn's error itself and nothing written", c, err)
	}
	if got := readCount(t, s.path); got != "1\n" {
		t.Errorf("file after failed fn = %q, want %q", got, "1\n")
	}
}

// TestMutateInsideMutateIsReentrant: a nested Mutate on the same file, even
// with a fresh context, fails at once with ErrReentrant; another goroutine
// waits and then succeeds. Ablation: without the owner check in package
// lock, the nested call deadlocks and this test times out.
func TestMutateInsideMutateIsReentrant(t *testing.T) {
	s := newCounter(t)
	other := must(NewStore[*counter](s.path, counterCodec{})) // a second Store value, same file
	waiterDone := make(chan error, 1)
	_, err := s.Mutate(context.Background(), func(c *counter) error {
		_, err := other.Mutate(context.Background(), func(c *counter) error { c.n += 100; return nil })
		if !errors.Is(err, lock.ErrReentrant) {
			t.Errorf("nested Mutate = %v, want ErrReentrant", err)
		}
		go func() {
			_, err := other.Mutate(context.Background(), func(c *counter) error { c.n += 10; return nil })
			waiterDone <- err
		}()
		select {
		case err := <-waiterDone:
			t.Errorf("Mutate from another goroutine returned %v while the lock was held", err)
		case <-time.After(50 * time.Millisecond):
		}
		c.n++
		return nil
	})
	if err != nil {
		t.Fatalf("outer Mutate = %v", err)
	}
	select {
	case err := <-waiterDone:
		if err != nil {
			t.Fatalf("waiting Mutate = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiting Mutate never finished")
	}
	if got := readCount(t, s.path); got != "11\n" {
		t.Errorf("file = %q, want %q (outer +1, waiter +10, nested nothing)", got, "11\n")
	}
}

// TestMutatePanicReleasesLock: a panic in fn propagates, writes nothing and
// leaves the lock free. Ablation: dropping the deferred Release makes the
// TryAcquire below fail.
func TestMutatePanicReleasesLock(t *testing.T) {
	s := newCounter(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recover() = %v, want the panic value", r)
			}
		}()
		s.Mutate(context.Background(), func(c *counter) error { c.n = 5; panic("boom") })
	}()
	lp, _ := s.LockPath()
	done := make(chan error, 1)
	go func() { // another goroutine: re-entry is judged per goroutine
		h, err := lock.TryAcquire(lp)
		if err == nil {
			h.Release()
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("TryAcquire after panic = %v, want the lock free", err)
	}
	if _, err := os.Stat(s.path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("panicking Mutate wrote the file")
	}
}

func TestMutateDecodeErrorNamesPath(t *testing.T) {
	s := newCounter(t)
	if err := os.WriteFile(s.path, []byte("not a number\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Mutate(context.Background(), func(c *counter) error { c.n++; return nil })
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "Decode" || pe.Path != s.path {
		t.Fatalf("Mutate(corrupt) = %v, want a Decode *fs.PathError naming the file", err)
	}
	if got := readCount(t, s.path); got != "not a number\n" {
		t.Errorf("corrupt file was rewritten: %q", got)
	}
}

// TestMutateProbedTakesNoLockForNoOp: a no-op succeeds where the lock cannot
// be taken (its directory is a regular file); a real change still needs it.
// Ablation: probing nothing (calling Mutate directly) fails the first call.
func TestMutateProbedTakesNoLockForNoOp(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := must(NewStore[*counter](filepath.Join(dir, "count.txt"), counterCodec{}, WithLockPath(filepath.Join(blocker, "x.lock"))))
	if err := os.WriteFile(s.path, []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := s.MutateProbed(context.Background(), func(c *counter) error { c.n = 3; return nil })
	if err != nil || c.Written {
		t.Fatalf("MutateProbed(no-op) = %+v, %v, want success with nothing written", c, err)
	}
	if _, err := s.MutateProbed(context.Background(), func(c *counter) error { c.n = 4; return nil }); err == nil {
		t.Fatalf("MutateProbed(change) with an impossible lock = nil, want an error")
	}
	if got := readCount(t, s.path); got != "3\n" {
		t.Errorf("file = %q, want it untouched", got)
	}
}

func TestRestoreOnlyOverOwnedVersions(t *testing.T) {
	ctx := context.Background()
	s := newCounter(t)
	snap, _ := readOrNil(s.path) // missing: nil
	mine, err := s.Mutate(ctx, func(c *counter) error { c.n = 1; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Someone else writes.
	if _, err := s.Mutate(ctx, func(c *counter) error { c.n = 2; return nil }); err != nil {
		t.Fatal(err)
	}
	c, err := s.Restore(ctx, snap, sum(mine))
	if !errors.Is(err, ErrDiverged) || c.Written {
		t.Fatalf("Restore over a rival's version = %+v, %v, want ErrDiverged and nothing written", c, err)
	}
	if got := readCount(t, s.path); got != "2\n" {
		t.Fatalf("file after refused Restore = %q, want the rival's %q", got, "2\n")
	}
	own, _ := s.Mutate(ctx, func(c *counter) error { c.n = 3; return nil })
	c, err = s.Restore(ctx, []byte("1\n"), sum(mine), sum(own))
	if err != nil || !c.Written || sum(c) != digestOf([]byte("1\n")) {
		t.Fatalf("Restore over an owned version = %+v, %v, want written", c, err)
	}
	c, err = s.Restore(ctx, nil, sum(c))
	if d, ok := c.Digest(); err != nil || !c.Written || !ok || d != digestOf(nil) {
		t.Fatalf("Restore(nil) = %+v, %v, want the file removed, with the digest of a missing file", c, err)
	}
	if _, err := os.Stat(s.path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Restore(nil) left the file: %v", err)
	}
}

// TestLockPlacement: the lock file is <path>.lock by default, the given one
// WithLockPath, and lock.SidecarPath's WithStateRoot; finding it creates
// nothing.
func TestLockPlacement(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data", "ledger.md")
	root := filepath.Join(dir, "state")
	want, err := lock.SidecarPath(root, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"default", nil, data + ".lock"},
		{"explicit", []Option{WithLockPath(filepath.Join(dir, "x.lock"))}, filepath.Join(dir, "x.lock")},
		{"state root", []Option{WithStateRoot(root)}, want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := must(NewStore[*counter](data, counterCodec{}, tc.opts...)).LockPath()
			if err != nil || got != tc.want {
				t.Errorf("LockPath() = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
	if !strings.HasPrefix(want, filepath.Join(root, "locks")+string(filepath.Separator)) {
		t.Errorf("sidecar %q not under %s/locks", want, root)
	}
	// NewStore does no I/O and LockPath creates nothing, as their godoc
	// says: neither the data file's directory, nor the state root, nor a
	// lock file exists after both. Ablation: NewStore or LockPath making the
	// lock's directory ahead of the first lock is red.
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("after NewStore and LockPath, ReadDir(%s) = %v, %v, want it empty", dir, ents, err)
	}
}

// TestTxWriteAfterItsLockIsReleasedPublishesNothing: a Locked callback
// whose lock another goroutine released (a Handle may be released from any
// goroutine) no longer holds it, so its Tx.Write publishes nothing and
// returns an error matching lock.ErrLockLost, although the lock file at
// the path is the one it locked. Ablation: Handle.Current comparing
// identities alone makes the Write publish without the lock, and this test
// goes red.
func TestTxWriteAfterItsLockIsReleasedPublishesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.json")
	require.NoError(t, os.WriteFile(path, []byte("{}\n"), 0o644))
	s := must(NewStore[*kv](path, kvCodec{}))
	var c Commit
	err := s.Locked(context.Background(), func(tx *Tx) error {
		released := make(chan error, 1)
		go func() { released <- tx.Lock().Release() }()
		if err := <-released; err != nil {
			return err
		}
		var err error
		c, err = tx.Write(path, []byte("{\"a\":\"1\"}\n"))
		return err
	})
	require.ErrorIs(t, err, lock.ErrLockLost, "Tx.Write after its lock was released = %+v, %v, want ErrLockLost", c, err)
	require.False(t, c.Written, "Tx.Write after its lock was released = %+v, want nothing written", c)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "{}\n", string(got), "file after a Write without the lock = %q, want it unchanged", got)
}

func TestLockedTxEndsWithCallback(t *testing.T) {
	s := newCounter(t)
	var kept *Tx
	other := filepath.Join(filepath.Dir(s.path), "archive.txt")
	err := s.Locked(context.Background(), func(tx *Tx) error {
		kept = tx
		if _, err := tx.Write(other, []byte("a\n")); err != nil {
			return err
		}
		if err := tx.Append(other+".log", []byte("one\n")); err != nil {
			return err
		}
		if err := tx.Append(other+".log", []byte("two\n")); err != nil {
			return err
		}
		if b, _ := tx.Read(other + ".log"); string(b) != "one\ntwo\n" {
			t.Errorf("log after two Appends = %q", b)
		}
		b, err := tx.Read(other)
		if string(b) != "a\n" || err != nil {
			t.Errorf("tx.Read = %q, %v", b, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, late := range map[string]func(){
		"Write":  func() { kept.Write(other, []byte("late")) },
		"Append": func() { kept.Append(other, []byte("late")) },
		"Read":   func() { kept.Read(other) },
		"Lock":   func() { kept.Lock() },
	} {
		require.Panics(t, late, "Tx.%s after Locked returned = no panic, want a panic", name)
	}
	if b, _ := os.ReadFile(other); string(b) != "a\n" {
		t.Errorf("file after a late Tx.Write = %q, want %q", b, "a\n")
	}
}

// TestTxRead gives a file's bytes, a non-nil empty slice for an empty file,
// nil for a missing one, and an error naming the path for anything else. A
// path through a regular file is an error (ENOTDIR) on Unix; Windows reports
// it not found (ERROR_PATH_NOT_FOUND, fs.ErrNotExist), so there it reads as
// a missing file.
func TestTxRead(t *testing.T) {
	dir := t.TempDir()
	file, empty := filepath.Join(dir, "f"), filepath.Join(dir, "e")
	lockDir := t.TempDir()
	os.WriteFile(file, []byte("7\n"), 0o644)
	os.WriteFile(empty, nil, 0o644)
	for _, tc := range []struct {
		name, path string
		want       []byte
		err        bool
	}{
		{"file", file, []byte("7\n"), false},
		{"empty", empty, []byte{}, false},
		{"missing", filepath.Join(dir, "missing"), nil, false},
		{"directory", dir, nil, true},
		{"under a file", filepath.Join(file, "x"), nil, runtime.GOOS != "windows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := must(NewStore[*counter](tc.path, counterCodec{}, WithLockPath(filepath.Join(lockDir, "read.lock"))))
			var got []byte
			var err error
			lerr := s.Locked(context.Background(), func(tx *Tx) error { got, err = tx.Read(tc.path); return nil })
			require.NoError(t, lerr)
			if (err != nil) != tc.err || string(got) != string(tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("Tx.Read(%q) = %q (nil %v), %v, want %q (nil %v), error %v", tc.path, got, got == nil, err, tc.want, tc.want == nil, tc.err)
			}
			var pe *fs.PathError
			if err != nil && (!errors.As(err, &pe) || pe.Path != tc.path) {
				t.Errorf("Tx.Read(%q) error %v does not name the path", tc.path, err)
			}
		})
	}
}

// TestWriteOptions: a Tx.Write or Tx.Append made with atomicfile options
// writes the same bytes as without them, and a store made WithoutSync puts
// atomicfile.WithoutSync before the write's own options.
func TestWriteOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store []Option
		opts  []atomicfile.Option
		want  int // atomicfile options per write
	}{
		{"durable", nil, nil, 0},
		{"WithoutDirSync", nil, []atomicfile.Option{atomicfile.WithoutDirSync()}, 1},
		{"WithoutSync store", []Option{WithoutSync()}, nil, 1},
		{"both", []Option{WithoutSync()}, []atomicfile.Option{atomicfile.WithoutDirSync()}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCounter(t, tc.store...)
			if got := len(s.o.writeOptions(tc.opts)); got != tc.want {
				t.Errorf("writeOptions(%d options) = %d options, want %d", len(tc.opts), got, tc.want)
			}
			other := filepath.Join(filepath.Dir(s.path), "marker")
			err := s.Locked(context.Background(), func(tx *Tx) error {
				if _, err := tx.Write(other, []byte("running\n"), tc.opts...); err != nil {
					return err
				}
				return tx.Append(other+".log", []byte("one\n"), tc.opts...)
			})
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]string{other: "running\n", other + ".log": "one\n"} {
				if b, err := os.ReadFile(path); string(b) != want || err != nil {
					t.Errorf("ReadFile(%s) = %q, %v; want %q", path, b, err, want)
				}
			}
		})
	}
}

// bytesCodec's document is a copy of the file's bytes.
type bytesCodec struct{}

func (bytesCodec) Decode(data []byte) (*[]byte, error) { b := bytes.Clone(data); return &b, nil }
func (bytesCodec) Encode(b *[]byte) ([]byte, error)    { return *b, nil }

// TestCommitDigests checks Commit.Digest against the bytes on disk after a
// write, for files from empty to a few pages, and that a transaction that
// writes nothing reports no digest. Ablation: a Commit that hashes the bytes
// read (the old ones) turns it red.
func TestCommitDigests(t *testing.T) {
	for _, size := range []int{0, 100, 4095, 8192, 3 << 13} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			old := bytes.Repeat([]byte("a"), size)
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			s := must(NewStore[*[]byte](path, bytesCodec{}))
			c, err := s.Mutate(context.Background(), func(b *[]byte) error {
				*b = append(*b, 'b')
				return nil
			})
			now, rerr := os.ReadFile(path)
			if err != nil || rerr != nil || !c.Written {
				t.Fatalf("Mutate = %+v, %v (ReadFile: %v)", c, err, rerr)
			}
			if d, ok := c.Digest(); !ok || d != digestOf(now) {
				t.Errorf("Mutate on %d bytes: Digest() = %v, %v; want %v, true", size, d, ok, digestOf(now))
			}
			c, err = s.Mutate(context.Background(), func(*[]byte) error { return nil })
			if d, ok := c.Digest(); err != nil || c.Written || ok {
				t.Errorf("no-op Mutate = %+v, %v, Digest() = %v, %v; want unwritten, with no digest", c, err, d, ok)
			}
		})
	}
}

// runCodec's document is a run of one letter, stored as "<length>:<run>\n".
// Decode checks the whole file, so it notices bytes that change under it.
type runCodec struct{}

type run struct {
	n      int
	letter byte
}

func (runCodec) Decode(data []byte) (*run, error) {
	if data == nil {
		return &run{letter: 'a'}, nil
	}
	head, body, ok := bytes.Cut(data, []byte(":"))
	n, err := strconv.Atoi(string(head))
	if !ok || err != nil || len(body) != n+1 || body[n] != '\n' {
		return nil, fmt.Errorf("torn run file %.40q", data)
	}
	for _, b := range body[:n] {
		if b != body[0] {
			return nil, fmt.Errorf("torn run file %.40q", data)
		}
	}
	r := &run{n: n, letter: 'a'}
	if n > 0 {
		r.letter = body[0]
	}
	return r, nil
}

func (runCodec) Encode(r *run) ([]byte, error) {
	return fmt.Appendf(nil, "%d:%s\n", r.n, bytes.Repeat([]byte{r.letter}, r.n)), nil
}

// keptRun is a run that keeps the bytes it was decoded from, not a copy,
// as the Codec contract allows.
type keptRun struct {
	run
	raw []byte
}

// keepingCodec is runCodec keeping its input in the document.
type keepingCodec struct{}

func (keepingCodec) Decode(data []byte) (*keptRun, error) {
	r, err := runCodec{}.Decode(data)
	if err != nil {
		return nil, err
	}
	return &keptRun{*r, data}, nil
}

func (keepingCodec) Encode(k *keptRun) ([]byte, error) { return runCodec{}.Encode(&k.run) }

// TestDecodeMayKeepItsInput runs transactions and lock-free reads from
// several goroutines on one store whose codec keeps the bytes Decode is
// given, on a file that grows and shrinks; the documents that View returned
// are checked again once all the calls are done: each must still hold the
// bytes it was decoded from. Ablation: readDoc handing Decode the scratch
// buffer that reads land in, instead of a copy (as the engine once handed
// its pooled read buffers), turns it red (a kept document's bytes are torn).
func TestDecodeMayKeepItsInput(t *testing.T) {
	ctx := context.Background()
	// Two stores of one file, so that each often reads what the other
	// wrote, which it copies, besides what it wrote itself.
	path := filepath.Join(t.TempDir(), "run.txt")
	stores := []*Store[*keptRun]{must(NewStore[*keptRun](path, keepingCodec{}, WithoutSync())), must(NewStore[*keptRun](path, keepingCodec{}, WithoutSync()))}
	// First in turn: a View of what the other store wrote, kept while
	// more is read.
	set := func(s *Store[*keptRun], n int) {
		_, err := s.Mutate(ctx, func(r *keptRun) error { r.n, r.letter = n, 'x'; return nil })
		require.NoError(t, err)
	}
	set(stores[0], 3)
	set(stores[1], 5)
	first, err := stores[0].View(ctx)
	require.NoError(t, err)
	set(stores[1], 7)
	_, err = stores[0].View(ctx)
	require.NoError(t, err)
	require.Equal(t, "5:xxxxx\n", string(first.raw), "bytes kept by a View's document after another read")

	sizes := []int{0, 10, 5000, 3, 70000, 200, 0, 9000}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	views := make([][]*keptRun, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 60 {
				n, letter := sizes[(g+i)%len(sizes)], byte('a'+g)
				s := stores[i%2]
				c, err := s.Mutate(ctx, func(r *keptRun) error { r.n, r.letter = n, letter; return nil })
				if err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					if _, err := s.MutateProbed(ctx, func(r *keptRun) error { r.n, r.letter = n, letter; return nil }); err != nil {
						errs <- fmt.Errorf("MutateProbed after Mutate (written %v): %w", c.Written, err)
						return
					}
				}
			}
		})
		wg.Go(func() {
			for i := range 200 {
				d, err := stores[i%2].View(ctx)
				if err != nil {
					errs <- err
					return
				}
				views[g] = append(views[g], d)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, vs := range views {
		for _, d := range vs {
			if again, err := (runCodec{}).Decode(d.raw); err != nil || *again != d.run {
				t.Fatalf("Decode(bytes kept by a View's document) = %+v, %v; want %+v: the engine reused them", again, err, d.run)
			}
		}
	}
}

// TestRestoreRefusesARivalsBytesAfterANoOp is the authorship hole of issue
// 12, step by step: A writes, a rival appends, A runs a Mutate that changes
// nothing and keeps what its Commit reports, and A's Restore of the snapshot
// from before its write must be refused with ErrDiverged, keeping the
// rival's line. Ablation: a Commit whose Digest reports the bytes a no-op
// read (what Commit.Digest was before) lets the Restore through, and the
// rival's line is gone.
func TestRestoreRefusesARivalsBytesAfterANoOp(t *testing.T) {
	ctx := context.Background()
	s := must(NewStore[*[]byte](filepath.Join(t.TempDir(), "log.txt"), bytesCodec{}))
	snapshot, _ := readOrNil(s.path) // nil: before A's write
	a, err := s.Mutate(ctx, func(b *[]byte) error { *b = append(*b, "A's line\n"...); return nil })
	require.NoError(t, err, "Mutate(A writes)")
	mine, ok := a.Digest()
	require.True(t, ok, "Mutate(A writes).Digest() = _, false, want the digest of A's bytes")
	rival := must(NewStore[*[]byte](s.path, bytesCodec{}))
	_, err = rival.Mutate(ctx, func(b *[]byte) error { *b = append(*b, "the rival's line\n"...); return nil })
	require.NoError(t, err, "Mutate(the rival appends)")
	noop, err := s.Mutate(ctx, func(*[]byte) error { return nil })
	require.NoError(t, err, "Mutate(A's no-op)")
	owned := []Digest{mine}
	if d, ok := noop.Digest(); ok {
		owned = append(owned, d)
	}
	_, err = s.Restore(ctx, snapshot, owned...)
	require.ErrorIs(t, err, ErrDiverged, "Restore(snapshot, A's digests) after a rival's append = %v, want ErrDiverged", err)
	got, _ := os.ReadFile(s.path)
	require.Equal(t, "A's line\nthe rival's line\n", string(got), "file after the refused Restore")
}

// TestRestoreRemovalSyncsTheDirectory: Restore(nil) removes the file and
// fsyncs its directory, as a write fsyncs it after the rename; WithoutSync
// skips that fsync. Ablation: dropping the SyncDir call after the removal
// turns it red.
func TestRestoreRemovalSyncsTheDirectory(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			var opts []Option
			if !sync {
				opts = append(opts, WithoutSync())
			}
			s := newCounter(t, opts...)
			ctx := context.Background()
			c, err := s.Mutate(ctx, func(c *counter) error { c.n = 1; return nil })
			require.NoError(t, err)
			var synced []string
			remove := seam.Set(t, func(p seam.Point, dir string) error {
				if p == seam.SyncDir {
					synced = append(synced, dir)
				}
				return nil
			})
			c, err = s.Restore(ctx, nil, sum(c))
			remove()
			require.NoError(t, err, "Restore(nil)")
			require.True(t, c.Written, "Restore(nil).Written = false, want true")
			_, err = os.Stat(s.path)
			require.ErrorIs(t, err, fs.ErrNotExist, "Restore(nil) left the file")
			dir := filepath.Dir(s.path)
			if sync {
				require.Equal(t, []string{dir}, synced, "directories fsynced by Restore(nil)")
			} else {
				require.Empty(t, synced, "directories fsynced by Restore(nil) WithoutSync")
			}
		})
	}
}

// TestNewStoreRefusesWhatWouldDoNothing: a document type that fn would get
// a copy of (a struct, an int, a slice it may append to) is refused, and so
// is a pointer to a pointer (JSON[*T]'s document, which fn would find nil),
// as are an empty path, a nil codec and invalid options, all with an error
// matching ErrInvalidArgument that names the path. Ablations: dropping the
// kind check lets Store[counter] through, whose Mutate succeeds without
// writing; dropping the pointer-to-pointer check lets JSON[*counter]
// through, and this test goes red.
func TestNewStoreRefusesWhatWouldDoNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	for name, err := range map[string]error{
		"struct document":               second(NewStore[counter](path, valueCodec[counter]{})),
		"int document":                  second(NewStore[int](path, valueCodec[int]{})),
		"slice document":                second(NewStore[[]byte](path, valueCodec[[]byte]{})),
		"empty path":                    second(NewStore[*counter]("", counterCodec{})),
		"nil codec":                     second(NewStore[*counter](path, nil)),
		"relative root":                 second(NewStore[*counter](path, counterCodec{}, WithStateRoot("state"))),
		"empty lock path":               second(NewStore[*counter](path, counterCodec{}, WithLockPath(""))),
		"pointer to a pointer document": second(NewStore(path, JSON[*counter]())),
	} {
		require.ErrorIs(t, err, ErrInvalidArgument, "NewStore(%s) = %v, want ErrInvalidArgument", name, err)
		if name != "empty path" {
			require.ErrorContains(t, err, path, "NewStore(%s) = %v, want the path named", name, err)
		}
	}
	_, err := NewStore[map[string]int](path, valueCodec[map[string]int]{})
	require.NoError(t, err, "NewStore(map document) = %v, want nil", err)
}

func second[T any](_ T, err error) error { return err }

// TestNilFnIsRefusedBeforeAnyIO: Mutate, MutateProbed and Locked with a nil
// fn return an error matching ErrInvalidArgument that names the data file,
// having taken no lock and created nothing (no lock file, no state root).
// Ablation: dropping the check makes Mutate panic with a nil dereference
// under the lock, and this test goes red.
func TestNilFnIsRefusedBeforeAnyIO(t *testing.T) {
	dir := t.TempDir()
	s := must(NewStore[*counter](filepath.Join(dir, "count.txt"), counterCodec{}, WithStateRoot(filepath.Join(dir, "state"))))
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Mutate":       func() error { _, err := s.Mutate(ctx, nil); return err },
		"MutateProbed": func() error { _, err := s.MutateProbed(ctx, nil); return err },
		"Locked":       func() error { return s.Locked(ctx, nil) },
	} {
		err := call()
		require.ErrorIs(t, err, ErrInvalidArgument, "%s(ctx, nil) = %v, want ErrInvalidArgument", name, err)
		require.ErrorContains(t, err, s.path, "%s(ctx, nil) = %v, want the path named", name, err)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "directory after calls with a nil fn = %v, want nothing created", entries)
}

// valueCodec is a codec of any document type that writes nothing.
type valueCodec[D any] struct{}

func (valueCodec[D]) Decode([]byte) (D, error) { var d D; return d, nil }
func (valueCodec[D]) Encode(D) ([]byte, error) { return nil, nil }
