//go:build unix

package board

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"github.com/filetxn/filetxn/internal/fsys"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/lock"
)

// benchBoard is a 300-story board (15 epics of 20 stories, comments included), about
// 17 KB, with every story done.
func benchBoard() (string, []string) {
	var b strings.Builder
	var keys []string
	b.WriteString("# Sprint status\ngenerated: 01-06-2026 10:00\nlast_updated: 01-06-2026 10:00\n\ndevelopment_status:\n")
	for e := 1; e <= 15; e++ {
		fmt.Fprintf(&b, "  # Epic %d\n  epic-%d: in-progress\n", e, e)
		for s := 1; s <= 20; s++ {
			key := fmt.Sprintf("%d-%d-some-story-slug-%d", e, s, s)
			keys = append(keys, key)
			fmt.Fprintf(&b, "  %s: done  # owner: pat\n", key)
		}
		fmt.Fprintf(&b, "  epic-%d-retrospective: optional\n\n", e)
	}
	return b.String(), keys
}

// benchStore writes benchBoard in a fresh directory and opens it with a sidecar lock
// under dir/state; it returns the Store, the directory, the board and its story keys.
func benchStore(b *testing.B) (s *Store, dir, src string, keys []string) {
	b.Helper()
	src, keys = benchBoard()
	dir = b.TempDir()
	path := filepath.Join(dir, "sprint-status.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := Open(path, filetxn.WithStateRoot(filepath.Join(dir, "state")))
	if err != nil {
		b.Fatal(err)
	}
	return s, dir, src, keys
}

// flipper makes every Advance a real write: it moves story i between done and
// awaiting-operator (the allowlisted regression), remembering where each one is.
type flipper struct {
	keys []string
	done []bool
	i    int
}

func newFlipper(keys []string) *flipper {
	f := &flipper{keys: keys, done: make([]bool, len(keys))}
	for i := range f.done {
		f.done[i] = true
	}
	return f
}

func (f *flipper) next() (key string, target Status) {
	k := f.i % len(f.keys)
	f.i++
	f.done[k] = !f.done[k]
	if f.done[k] {
		return f.keys[k], Done
	}
	return f.keys[k], AwaitingOperator
}

// BenchmarkAdvance measures one durable Store.Advance that writes, on a 300-story board
// with a sidecar lock. Issue 4 asks for at most 1.10x the raw floor (BenchmarkRawFloor)
// in the same run. Because a shared machine drifts, the benchmark also runs the floor
// itself, untimed, in blocks interleaved with its own advances, on the same file system,
// and reports it (floor-ns/op) and the ratio of the means (x-floor): one run gives the
// ratio. A few fsyncs that stall for milliseconds move means, so it also reports the
// ratio of the medians of single advances and floor cycles (x-floor-median).
func BenchmarkAdvance(b *testing.B) {
	s, dir, src, keys := benchStore(b)
	floor := newRawFloor(b, filepath.Join(dir, "floor"), src)
	f := newFlipper(keys)
	ctx := context.Background()
	b.SetBytes(int64(len(src)))
	const block = 10
	advances := make([]time.Duration, 0, b.N)
	floors := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		key, target := f.next()
		start := time.Now()
		if got, err := s.Advance(ctx, key, target, AllowRegression()); got != target || err != nil {
			b.Fatalf("Advance(%q, %q) = %q, %v", key, target, got, err)
		}
		advances = append(advances, time.Since(start))
		if i%block == block-1 {
			b.StopTimer()
			for range block {
				start := time.Now()
				floor.cycle(b)
				floors = append(floors, time.Since(start))
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	if len(floors) > 0 {
		perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		floorPerOp := float64(sum(floors).Nanoseconds()) / float64(len(floors))
		b.ReportMetric(floorPerOp, "floor-ns/op")
		b.ReportMetric(perOp/floorPerOp, "x-floor")
		b.ReportMetric(float64(median(advances))/float64(median(floors)), "x-floor-median")
	}
}

// sum and median are of durations; median sorts ds.
func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkMutate50 measures 50 advances batched in one durable Mutate; compare with
// BenchmarkAdvance (the target is at most 1.5x).
func BenchmarkMutate50(b *testing.B) {
	s, _, src, keys := benchStore(b)
	f := newFlipper(keys)
	ctx := context.Background()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		c, err := s.Mutate(ctx, func(d *Doc) error {
			for range 50 {
				key, target := f.next()
				if _, err := d.Advance(key, Status(target), AllowRegression()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || !c.Written {
			b.Fatalf("Mutate = %+v, %v", c, err)
		}
	}
}

// BenchmarkRawFloor is the least a durable locked read-modify-write of the same board can
// cost, by hand and with no checks: flock a lock file, read the board, write a
// temporary file, fsync it, rename it over the board, fsync the directory, unlock.
func BenchmarkRawFloor(b *testing.B) {
	src, _ := benchBoard()
	floor := newRawFloor(b, b.TempDir(), src)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		floor.cycle(b)
	}
}

// rawFloor is the state of the raw floor's cycles: a board, its temporary name and an
// open lock file, all in one directory.
type rawFloor struct {
	dir, path, tmp string
	lf             *os.File
}

func newRawFloor(b *testing.B, dir, src string) *rawFloor {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	r := &rawFloor{dir: dir, path: filepath.Join(dir, "sprint-status.yaml"), tmp: filepath.Join(dir, ".sprint-status.yaml.tmp")}
	if err := os.WriteFile(r.path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, "board.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lf.Close() })
	r.lf = lf
	return r
}

// cycle is one raw durable read-modify-write under flock.
func (r *rawFloor) cycle(b *testing.B) {
	if err := syscall.Flock(int(r.lf.Fd()), syscall.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(r.path)
	if err != nil {
		b.Fatal(err)
	}
	r.writeRaw(b, data)
	if err := syscall.Flock(int(r.lf.Fd()), syscall.LOCK_UN); err != nil {
		b.Fatal(err)
	}
}

// writeRaw writes data to a temporary file, fsyncs it, renames it over the board and
// fsyncs the directory.
func (r *rawFloor) writeRaw(b *testing.B, data []byte) {
	f, err := os.OpenFile(r.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(r.tmp, r.path); err != nil {
		b.Fatal(err)
	}
	d, err := os.Open(r.dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	d.Close()
}

// flipCodec is about the least a codec can do: the document is a copy of the bytes, and
// Encode gives a copy of it back. Both copies are needed: the benchmark's fn flips a byte of
// the document in place, and the Codec contract forbids changing the bytes Decode was given
// or what Encode returned (the store's baseline): with either shared, the store would see no
// change and write nothing.
type flipCodec struct{}

func (flipCodec) Decode(b []byte) (*[]byte, error) { c := bytes.Clone(b); return &c, nil }
func (flipCodec) Encode(b *[]byte) ([]byte, error) { return bytes.Clone(*b), nil }

// newEngine returns an engine store for the board at path, configured as board.Open
// configures its own (lock under stateRoot) plus opts.
func newEngine(path, stateRoot string, opts ...filetxn.Option) *filetxn.Store[*[]byte] {
	opts = append([]filetxn.Option{filetxn.WithStateRoot(stateRoot)}, opts...)
	s, err := filetxn.NewStore[*[]byte](path, flipCodec{}, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// BenchmarkEngineFloor is one durable engine transaction on the same board and lock
// placement, made as Store.Advance makes its own but with no parsing: a lock-free read
// into a reused buffer, then Mutate, which flips one byte. BenchmarkAdvance minus this is
// about what package board adds.
func BenchmarkEngineFloor(b *testing.B) {
	src, _ := benchBoard()
	dir := b.TempDir()
	path := filepath.Join(dir, "sprint-status.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	s := newEngine(path, filepath.Join(dir, "state"))
	b.SetBytes(int64(len(src)))
	var buf []byte
	for b.Loop() {
		engineTx(b, s, path, &buf)
	}
}

// BenchmarkParse300 measures parsing the 300-story board, the work the Codec's cache
// saves when the bytes are the ones this process last wrote.
func BenchmarkParse300(b *testing.B) {
	src, _ := benchBoard()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse([]byte(src)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecAdvance is the CPU work of one Store.Advance without I/O: the probe
// decodes (a cache hit) and advances; the locked pass decodes (a cache hit), advances and
// encodes, as the store does.
func BenchmarkCodecAdvance(b *testing.B) {
	src, keys := benchBoard()
	c := newCodec()
	data := []byte(src)
	f := newFlipper(keys)
	for b.Loop() {
		key, target := f.next()
		var d *Doc
		for range 2 {
			var err error
			if d, err = c.Decode(data); err != nil {
				b.Fatal(err)
			}
			if _, err := d.Advance(key, Status(target), AllowRegression()); err != nil {
				b.Fatal(err)
			}
		}
		out, err := c.Encode(d)
		if err != nil {
			b.Fatal(err)
		}
		data = out
	}
}

// BenchmarkAdvanceBreakdown splits the cost of one durable Advance over the raw floor:
// every iteration runs, in a rotating order and each on its own board in one directory
// tree, the raw floor, the raw floor plus one engine ingredient (the lock package instead
// of a bare flock, the sidecar path resolution, an atomicfile write instead of the bare
// temporary file, two SHA-256 passes over the board (what a caller of Commit.Digest
// pays; Advance pays none), the probe's lock-free read), the raw floor plus all of them (all), a bare
// engine transaction (BenchmarkEngineFloor), the same without the lock's holder record
// (engine-noholder, lock-noholder) and a board Advance. It reports each one's median in
// µs (name-µs) and, for the whole ones, the ratio to the raw floor of medians (x-raw) and
// of means (x-raw-mean, which fsync outliers move). ns/op is one whole round of all of
// them. The rotation lets each variant leave work (such as a dirtied inode) to the next
// one's fsync, so BenchmarkAdvance, which runs advances back to back, is the ratio to
// go by.
func BenchmarkAdvanceBreakdown(b *testing.B) {
	src, keys := benchBoard()
	root := b.TempDir()
	ctx := context.Background()
	type variant struct {
		name string
		run  func()
		ds   []time.Duration
	}
	raw := func(name string, before func(r *rawFloor), after func(data []byte), acquire func(r *rawFloor) func(), write func(r *rawFloor, data []byte)) variant {
		r := newRawFloor(b, filepath.Join(root, name), src)
		return variant{name: name, run: func() { r.cycleWith(b, before, after, acquire, write) }}
	}
	stateRoot := filepath.Join(root, "state")
	advPath := filepath.Join(root, "advance", "sprint-status.yaml")
	engPath := filepath.Join(root, "engine", "sprint-status.yaml")
	engNoHolderPath := filepath.Join(root, "engine-noholder", "sprint-status.yaml")
	for _, p := range []string{advPath, engPath, engNoHolderPath} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s, err := Open(advPath, filetxn.WithStateRoot(stateRoot))
	if err != nil {
		b.Fatal(err)
	}
	eng := newEngine(engPath, stateRoot)
	engNoHolder := newEngine(engNoHolderPath, stateRoot, filetxn.WithLockOptions(lock.WithoutHolder()))
	var engBuf, engNoHolderBuf []byte
	f := newFlipper(keys)
	lockWith := func(opts ...lock.Option) func(r *rawFloor) func() {
		return func(r *rawFloor) func() {
			h, err := lock.Acquire(ctx, filepath.Join(r.dir, "pkg.lock"), opts...)
			if err != nil {
				b.Fatal(err)
			}
			return func() {
				if err := h.Release(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	lockPkg := lockWith()
	sidecar := func(r *rawFloor) {
		if _, err := lock.SidecarPath(stateRoot, r.path); err != nil {
			b.Fatal(err)
		}
	}
	atomicWrite := func(r *rawFloor, data []byte) {
		if err := atomicfile.WriteFile(r.path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	hash := func(data []byte) { _, _ = sha256.Sum256(data), sha256.Sum256(data) }
	probe := func(r *rawFloor) {
		if _, err := os.ReadFile(r.path); err != nil {
			b.Fatal(err)
		}
	}
	variants := []variant{
		raw("raw", nil, nil, nil, nil),
		raw("lock", nil, nil, lockPkg, nil),
		raw("lock-noholder", nil, nil, lockWith(lock.WithoutHolder()), nil),
		raw("sidecar", sidecar, nil, nil, nil),
		raw("atomicfile", nil, nil, nil, atomicWrite),
		raw("hash", nil, hash, nil, nil),
		raw("probe", probe, nil, nil, nil),
		raw("all", func(r *rawFloor) { probe(r); sidecar(r) }, hash, lockPkg, atomicWrite),
		{name: "engine", run: func() { engineTx(b, eng, engPath, &engBuf) }},
		{name: "engine-noholder", run: func() { engineTx(b, engNoHolder, engNoHolderPath, &engNoHolderBuf) }},
		{name: "advance", run: func() {
			key, target := f.next()
			if got, err := s.Advance(ctx, key, target, AllowRegression()); got != target || err != nil {
				b.Fatalf("Advance(%q, %q) = %q, %v", key, target, got, err)
			}
		}},
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range variants {
			v := &variants[(i+j)%len(variants)]
			start := time.Now()
			v.run()
			v.ds = append(v.ds, time.Since(start))
		}
	}
	b.StopTimer()
	micros := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	mean := func(ds []time.Duration) float64 { return micros(sum(ds)) / float64(len(ds)) }
	rawMed, rawMean := micros(median(variants[0].ds)), mean(variants[0].ds)
	for _, v := range variants {
		m := micros(median(v.ds))
		b.ReportMetric(m, v.name+"-µs")
		if v.name == "all" || strings.HasPrefix(v.name, "engine") || v.name == "advance" {
			b.ReportMetric(m/rawMed, v.name+"-x-raw")
			b.ReportMetric(mean(v.ds)/rawMean, v.name+"-x-raw-mean")
		}
	}
}

// engineTx is one BenchmarkEngineFloor transaction on s, the store of path; buf is the buffer its
// lock-free read reuses, as Advance's probe reuses one.
func engineTx(b *testing.B, s *filetxn.Store[*[]byte], path string, buf *[]byte) {
	ctx := context.Background()
	data, err := fsys.ReadState(path, "Read", *buf, 1)
	if err != nil {
		b.Fatalf("ReadState = %v", err)
	}
	*buf = data[:0]
	c, err := s.Mutate(ctx, func(p *[]byte) error {
		(*p)[0] ^= 1 // '#' <-> '"'
		return nil
	})
	if err != nil || !c.Written {
		b.Fatalf("Mutate = %+v, %v", c, err)
	}
}

// cycleWith is cycle with hooks: before runs before the lock is taken, after on the bytes
// read; acquire replaces the flock (returning the release), write replaces the bare
// temporary file, fsync, rename and directory fsync.
func (r *rawFloor) cycleWith(b *testing.B, before func(r *rawFloor), after func(data []byte), acquire func(r *rawFloor) func(), write func(r *rawFloor, data []byte)) {
	if before == nil && after == nil && acquire == nil && write == nil {
		r.cycle(b)
		return
	}
	if before != nil {
		before(r)
	}
	release := func() {
		if err := syscall.Flock(int(r.lf.Fd()), syscall.LOCK_UN); err != nil {
			b.Fatal(err)
		}
	}
	if acquire != nil {
		release = acquire(r)
	} else if err := syscall.Flock(int(r.lf.Fd()), syscall.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(r.path)
	if err != nil {
		b.Fatal(err)
	}
	if after != nil {
		after(data)
	}
	if write != nil {
		write(r, data)
	} else {
		r.writeRaw(b, data)
	}
	release()
}
