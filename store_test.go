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
	"sync/atomic"
	"testing"
	"time"

	"github.com/filetxn/filetxn/lock"
)

func newCounter(t *testing.T, opts ...Option) *Store[*counter] {
	t.Helper()
	return NewStore[*counter](filepath.Join(t.TempDir(), "count.txt"), counterCodec{}, opts...)
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
	if _, err := os.Stat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no-op Mutate created the file: %v", err)
	}
	c, err = s.Mutate(ctx, func(c *counter) error { c.n = 7; return nil })
	if err != nil || !c.Written || c.Digest != DigestOf([]byte("7\n")) || c.Before != DigestOf(nil) {
		t.Fatalf("Mutate(set 7) = %+v, %v, want written with the digest of %q", c, err, "7\n")
	}
	before, _ := os.Stat(s.Path())
	c, err = s.Mutate(ctx, func(c *counter) error { c.n = 7; return nil })
	if err != nil || c.Written || c.Digest != DigestOf([]byte("7\n")) {
		t.Fatalf("Mutate(same value) = %+v, %v, want nothing written", c, err)
	}
	after, _ := os.Stat(s.Path())
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
	if got := readCount(t, s.Path()); got != "1\n" {
		t.Errorf("file after failed fn = %q, want %q", got, "1\n")
	}
}

// TestMutateInsideMutateIsReentrant: a nested Mutate on the same file, even
// with a fresh context, fails at once with ErrReentrant; another goroutine
// waits and then succeeds. Ablation: without the owner check in package
// lock, the nested call deadlocks and this test times out.
func TestMutateInsideMutateIsReentrant(t *testing.T) {
	s := newCounter(t)
	other := NewStore[*counter](s.Path(), counterCodec{}) // a second Store value, same file
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
	if got := readCount(t, s.Path()); got != "11\n" {
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
	if _, err := os.Stat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("panicking Mutate wrote the file")
	}
}

func TestMutateDecodeErrorNamesPath(t *testing.T) {
	s := newCounter(t)
	if err := os.WriteFile(s.Path(), []byte("not a number\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Mutate(context.Background(), func(c *counter) error { c.n++; return nil })
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "Decode" || pe.Path != s.Path() {
		t.Fatalf("Mutate(corrupt) = %v, want a Decode *fs.PathError naming the file", err)
	}
	if got := readCount(t, s.Path()); got != "not a number\n" {
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
	s := NewStore[*counter](filepath.Join(dir, "count.txt"), counterCodec{}, WithLockPath(filepath.Join(blocker, "x.lock")))
	if err := os.WriteFile(s.Path(), []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := s.MutateProbed(context.Background(), func(c *counter) error { c.n = 3; return nil })
	if err != nil || c.Written || c.Digest != DigestOf([]byte("3\n")) {
		t.Fatalf("MutateProbed(no-op) = %+v, %v, want success with nothing written", c, err)
	}
	if _, err := s.MutateProbed(context.Background(), func(c *counter) error { c.n = 4; return nil }); err == nil {
		t.Fatalf("MutateProbed(change) with an impossible lock = nil, want an error")
	}
	if got := readCount(t, s.Path()); got != "3\n" {
		t.Errorf("file = %q, want it untouched", got)
	}
}

func TestRestoreOnlyOverOwnedVersions(t *testing.T) {
	ctx := context.Background()
	s := newCounter(t)
	snap, _ := s.ReadBytes(ctx) // missing: nil
	mine, err := s.Mutate(ctx, func(c *counter) error { c.n = 1; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Someone else writes.
	if _, err := s.Mutate(ctx, func(c *counter) error { c.n = 2; return nil }); err != nil {
		t.Fatal(err)
	}
	c, err := s.Restore(ctx, snap, mine.Digest)
	if !errors.Is(err, ErrDiverged) || c.Written {
		t.Fatalf("Restore over a rival's version = %+v, %v, want ErrDiverged and nothing written", c, err)
	}
	if got := readCount(t, s.Path()); got != "2\n" {
		t.Fatalf("file after refused Restore = %q, want the rival's %q", got, "2\n")
	}
	own, _ := s.Mutate(ctx, func(c *counter) error { c.n = 3; return nil })
	c, err = s.Restore(ctx, []byte("1\n"), mine.Digest, own.Digest)
	if err != nil || !c.Written || c.Digest != DigestOf([]byte("1\n")) {
		t.Fatalf("Restore over an owned version = %+v, %v, want written", c, err)
	}
	c, err = s.Restore(ctx, nil, c.Digest)
	if err != nil || !c.Written {
		t.Fatalf("Restore(nil) = %+v, %v, want the file removed", c, err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Restore(nil) left the file: %v", err)
	}
}

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
		{"beside", []Option{WithLockBeside()}, data + ".lock"},
		{"explicit", []Option{WithLockPath(filepath.Join(dir, "x.lock"))}, filepath.Join(dir, "x.lock")},
		{"state root", []Option{WithStateRoot(root)}, want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewStore[*counter](data, counterCodec{}, tc.opts...).LockPath()
			if err != nil || got != tc.want {
				t.Errorf("LockPath() = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
	if !strings.HasPrefix(want, filepath.Join(root, "locks")+string(filepath.Separator)) {
		t.Errorf("sidecar %q not under %s/locks", want, root)
	}
}

func TestLockedTxEndsWithCallback(t *testing.T) {
	s := newCounter(t)
	var kept *Tx
	other := filepath.Join(filepath.Dir(s.Path()), "archive.txt")
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
	if _, err := kept.Write(other, []byte("late")); !errors.Is(err, ErrTxDone) {
		t.Errorf("Write after Locked returned = %v, want ErrTxDone", err)
	}
	if err := kept.Append(other, []byte("late")); !errors.Is(err, ErrTxDone) {
		t.Errorf("Append after Locked returned = %v, want ErrTxDone", err)
	}
	if _, err := kept.ReadInto(other, nil); !errors.Is(err, ErrTxDone) {
		t.Errorf("ReadInto after Locked returned = %v, want ErrTxDone", err)
	}
}

// TestReadBytes: the lock-free read, the same into a buffer, and the locked
// Tx.ReadInto give a file's bytes, a non-nil empty slice for an empty file,
// nil for a missing one, and an error naming the path for anything else; the
// ...Into reads use the buffer given when it is large enough and leave
// at least 4 KiB of room. A path through a regular file is an error
// (ENOTDIR) on Unix; Windows reports it not found (ERROR_PATH_NOT_FOUND,
// fs.ErrNotExist), so there it reads as a missing file.
func TestReadBytes(t *testing.T) {
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
		s := NewStore[*counter](tc.path, counterCodec{}, WithLockPath(filepath.Join(lockDir, "read.lock")))
		reused := make([]byte, 0, 2*readSpare)
		for _, read := range []struct {
			name string
			fn   func() ([]byte, error)
		}{
			{"ReadBytes", func() ([]byte, error) { return s.ReadBytes(context.Background()) }},
			{"ReadBytesInto nil", func() ([]byte, error) { return s.ReadBytesInto(context.Background(), nil) }},
			{"ReadBytesInto reused", func() ([]byte, error) { return s.ReadBytesInto(context.Background(), reused) }},
			{"Tx.ReadInto", func() (got []byte, err error) {
				lerr := s.Locked(context.Background(), func(tx *Tx) error { got, err = tx.ReadInto(tc.path, reused); return nil })
				return got, errors.Join(err, lerr)
			}},
		} {
			t.Run(tc.name+"/"+read.name, func(t *testing.T) {
				got, err := read.fn()
				if (err != nil) != tc.err || string(got) != string(tc.want) || (got == nil) != (tc.want == nil) {
					t.Errorf("%s(%q) = %q (nil %v), %v, want %q (nil %v), error %v", read.name, tc.path, got, got == nil, err, tc.want, tc.want == nil, tc.err)
				}
				var pe *fs.PathError
				if err != nil && (!errors.As(err, &pe) || pe.Path != tc.path) {
					t.Errorf("%s(%q) error %v does not name the path", read.name, tc.path, err)
				}
				if strings.Contains(read.name, "Into") && got != nil && cap(got)-len(got) < readSpare {
					t.Errorf("%s(%q) leaves %d bytes of room, want at least readSpare", read.name, tc.path, cap(got)-len(got))
				}
				if strings.HasSuffix(read.name, "reused") && len(got) > 0 && &got[0] != &reused[:1][0] {
					t.Errorf("%s(%q) did not read into the buffer given", read.name, tc.path)
				}
			})
		}
	}
}

// TestNotDurable: NotDurable leaves a Write's data fsync on and turns its
// directory fsync off, turns an Append's fsync off, and changes nothing else:
// the bytes land as without it. A store made WithoutSync stays unsynced
// whatever the write says.
func TestNotDurable(t *testing.T) {
	for _, tc := range []struct {
		name            string
		store           []Option
		opts            []WriteOption
		wrote, appended durability
	}{
		{"durable", nil, nil, durable, durable},
		{"NotDurable", nil, []WriteOption{NotDurable()}, dataOnly, volatile},
		{"WithoutSync store", []Option{WithoutSync()}, nil, volatile, volatile},
		{"both", []Option{WithoutSync()}, []WriteOption{NotDurable()}, volatile, volatile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCounter(t, tc.store...)
			if w, a := s.o.durability(tc.opts, false), s.o.durability(tc.opts, true); w != tc.wrote || a != tc.appended {
				t.Errorf("durability of a write %v, of an append %v; want %v, %v", w, a, tc.wrote, tc.appended)
			}
			other := filepath.Join(filepath.Dir(s.Path()), "marker")
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

// TestCommitDigests checks Commit.Before and Commit.Digest against the bytes
// on disk before and after, for files from empty to a few pages, and for a
// transaction that writes nothing. Ablation: hashing the new bytes as the
// old (or the old as the new) turns it red.
func TestCommitDigests(t *testing.T) {
	for _, size := range []int{0, 100, 4095, 8192, 3 << 13} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			old := bytes.Repeat([]byte("a"), size)
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			s := NewStore[*[]byte](path, bytesCodec{})
			c, err := s.Mutate(context.Background(), func(b *[]byte) error {
				*b = append(*b, 'b')
				return nil
			})
			now, rerr := os.ReadFile(path)
			if err != nil || rerr != nil || !c.Written {
				t.Fatalf("Mutate = %+v, %v (ReadFile: %v)", c, err, rerr)
			}
			if c.Before != DigestOf(old) || c.Digest != DigestOf(now) {
				t.Errorf("Mutate on %d bytes: Before %v, Digest %v; want %v, %v", size, c.Before, c.Digest, DigestOf(old), DigestOf(now))
			}
			c, err = s.Mutate(context.Background(), func(*[]byte) error { return nil })
			if err != nil || c.Written || c.Before != DigestOf(now) || c.Digest != c.Before {
				t.Errorf("no-op Mutate = %+v, %v; want unwritten with both digests %v", c, err, DigestOf(now))
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

// appendRunCodec is runCodec that also encodes into a buffer it is given,
// and counts how often it is asked to.
type appendRunCodec struct {
	runCodec
	appends *atomic.Int64
}

func (c appendRunCodec) AppendEncode(dst []byte, r *run) ([]byte, error) {
	c.appends.Add(1)
	return fmt.Appendf(dst, "%d:%s\n", r.n, bytes.Repeat([]byte{r.letter}, r.n)), nil
}

// TestBufferReuse runs transactions and lock-free reads from several
// goroutines on one store that reuses its buffers, on a file that grows past
// a buffer's capacity and shrinks again. Every decode checks the whole file,
// buffers are zeroed as they go back to the pool (poisonRecycled), and the
// race detector watches them. Ablations: handing a buffer back to the pool
// before Decode and Encode are done with its bytes (recycle right after the
// read), sharing one buffer between calls, or, for the codec that appends,
// recycling the encoding buffer before the write, each turn it red.
func TestBufferReuse(t *testing.T) {
	t.Run("Encode", func(t *testing.T) { testBufferReuse(t, runCodec{}) })
	t.Run("AppendEncode", func(t *testing.T) {
		c := appendRunCodec{appends: new(atomic.Int64)}
		testBufferReuse(t, c)
		if c.appends.Load() == 0 {
			t.Errorf("AppendEncode was never called")
		}
	})
}

func testBufferReuse(t *testing.T, codec Codec[*run]) {
	poisonRecycled = true
	t.Cleanup(func() { poisonRecycled = false })
	ctx := context.Background()
	s := NewStore[*run](filepath.Join(t.TempDir(), "run.txt"), codec, WithBufferReuse(), WithoutSync())
	sizes := []int{0, 10, 5000, 3, 70000, 200, 0, 9000}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			for i := range 60 {
				n, letter := sizes[(g+i)%len(sizes)], byte('a'+g)
				written, err := s.Update(ctx, func(r *run) error { r.n, r.letter = n, letter; return nil })
				if err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					if _, err := s.MutateProbed(ctx, func(r *run) error { r.n, r.letter = n, letter; return nil }); err != nil {
						errs <- fmt.Errorf("MutateProbed after Update (written %v): %w", written, err)
						return
					}
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				if _, err := s.View(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAppendEncodeOnlyWithBufferReuse checks that a store uses AppendEncode
// only when it reuses buffers, the condition under which the codec's promise
// to keep nothing of dst is asked for.
func TestAppendEncodeOnlyWithBufferReuse(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		c := appendRunCodec{appends: new(atomic.Int64)}
		var opts []Option
		if reuse {
			opts = append(opts, WithBufferReuse())
		}
		s := NewStore[*run](filepath.Join(t.TempDir(), "run.txt"), c, opts...)
		if _, err := s.Update(context.Background(), func(r *run) error { r.n = 3; return nil }); err != nil {
			t.Fatal(err)
		}
		if got := readCount(t, s.Path()); got != "3:aaa\n" {
			t.Errorf("reuse %v: file = %q, want %q", reuse, got, "3:aaa\n")
		}
		if used := c.appends.Load() > 0; used != reuse {
			t.Errorf("reuse %v: AppendEncode used %v", reuse, used)
		}
	}
}

// TestUpdate checks that Update reports what Mutate reports, and nothing for
// a transaction that fails.
func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s := newCounter(t)
	if written, err := s.Update(ctx, func(c *counter) error { return nil }); err != nil || written {
		t.Fatalf("Update(no change, missing file) = %v, %v; want nothing written", written, err)
	}
	if written, err := s.Update(ctx, func(c *counter) error { c.n = 3; return nil }); err != nil || !written {
		t.Fatalf("Update(set 3) = %v, %v; want written", written, err)
	}
	if got := readCount(t, s.Path()); got != "3\n" {
		t.Fatalf("file = %q after Update(set 3)", got)
	}
	if written, err := s.Update(ctx, func(c *counter) error { c.n = 3; return nil }); err != nil || written {
		t.Fatalf("Update(same value) = %v, %v; want nothing written", written, err)
	}
	errNo := errors.New("no")
	if written, err := s.Update(ctx, func(c *counter) error { c.n = 4; return errNo }); err != errNo || written {
		t.Fatalf("Update(failing fn) = %v, %v; want errNo and nothing written", written, err)
	}
	err := s.Locked(ctx, func(*Tx) error {
		_, err := s.Update(ctx, func(*counter) error { return nil })
		return err
	})
	if !errors.Is(err, lock.ErrReentrant) {
		t.Fatalf("Update inside Locked = %v, want lock.ErrReentrant", err)
	}
}
