package loopstate

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
)

// The benchmarks compare a loop's operations with the raw floor (floorOp in
// floor_unix_test.go: flock, read, write a temp file, fsync, rename, fsync
// the directory, unlock) on the same state file size, in the same run. The
// ...VsFloor benchmarks interleave the two in every iteration, so that the
// noise of a shared machine hits both alike, and report both and their
// ratio.
//
//	go test -run '^$' -bench . -benchtime 200x ./loopstate/

var benchModes = []struct {
	name string
	opts []filetxn.Option
	sync bool
}{{"durable", nil, true}, {"nosync", []filetxn.Option{filetxn.WithoutSync()}, false}}

func benchLoop(b *testing.B, opts ...filetxn.Option) *Loop {
	b.Helper()
	r := mustRoot(NewRoot(b.TempDir(), opts...))
	l, err := r.Create(context.Background(), "bench", Template{Name: "bench", Gates: Gates{MaxTicks: i64(1 << 40)}}.apply)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// pauseOrResume is one operator transition: pause on even i, resume on odd.
func pauseOrResume(b *testing.B, l *Loop, i int) {
	var err error
	if i%2 == 0 {
		err = l.Pause(context.Background(), "bench", "benchmark")
	} else {
		err = l.Resume(context.Background())
	}
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPause is one operator transition (pause, then resume, ...):
// lock, check the lock file, read, decode, guard, encode, atomic write,
// unlock.
func BenchmarkPause(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			l := benchLoop(b, m.opts...)
			for i := 0; b.Loop(); i++ {
				pauseOrResume(b, l, i)
			}
		})
	}
}

// BenchmarkRawFloor is the floor for BenchmarkPause: the same state file,
// replaced the cheapest correct way.
func BenchmarkRawFloor(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			f := newFloor(b, benchLoop(b))
			for b.Loop() {
				f.op(b, m.sync)
			}
		})
	}
}

// BenchmarkPauseVsFloor interleaves, in every iteration, a floor operation,
// the same change made with the bare engine (filetxn.Store.Mutate on the
// state file's bytes, with the loop's lock options), and a transition. It
// reports each one's ns/op, pause/floor, engine/floor, and what loopstate
// adds to the engine (pause-engine-ns/op: the lock-file check after
// acquiring, decode, guard, encode).
func BenchmarkPauseVsFloor(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			f := newFloor(b, benchLoop(b)) // first: it skips where there is no raw floor
			l := benchLoop(b, m.opts...)
			e := benchLoop(b)
			eopts := []filetxn.Option{filetxn.WithLockPath(e.lock), filetxn.WithLockOptions(lock.WithPurpose("pause bench"))}
			if !m.sync {
				eopts = append(eopts, filetxn.WithoutSync())
			}
			eng, err := filetxn.NewStore[*[]byte](e.state, copyCodec{}, eopts...)
			if err != nil {
				b.Fatal(err)
			}
			flip := func(d *[]byte) error { (*d)[len(*d)-3] ^= 1; return nil }
			var op, floor, engine time.Duration
			steps := []func(i int) *time.Duration{
				func(int) *time.Duration { f.op(b, m.sync); return &floor },
				func(int) *time.Duration {
					if _, err := eng.Mutate(context.Background(), flip); err != nil {
						b.Fatal(err)
					}
					return &engine
				},
				func(i int) *time.Duration { pauseOrResume(b, l, i); return &op },
			}
			for i := 0; b.Loop(); i++ {
				// Rotate the order, so that none of the three always runs
				// right after another's fsync.
				for k := range steps {
					t0 := time.Now()
					acc := steps[(i+k)%len(steps)](i)
					*acc += time.Since(t0)
				}
			}
			report(b, "pause", op, floor)
			n := float64(b.N)
			b.ReportMetric(float64(engine.Nanoseconds())/n, "engine-ns/op")
			b.ReportMetric(float64(engine)/float64(floor), "engine/floor")
			b.ReportMetric(float64((op-engine).Nanoseconds())/n, "pause-engine-ns/op")
		})
	}
}

func report(b *testing.B, name string, op, floor time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(op.Nanoseconds())/n, name+"-ns/op")
	b.ReportMetric(float64(floor.Nanoseconds())/n, "floor-ns/op")
	b.ReportMetric(float64(op)/float64(floor), name+"/floor")
}

// noop is a harness that does nothing, so that a tick costs only its
// overhead.
func noop(context.Context, *Run) (Result, error) { return Result{Cost: &Cost{}}, nil }

// BenchmarkTickVsFloor is the overhead of a tick beyond its harness: a tick
// with a harness that does nothing (lock, recover check, gates, mark the
// tick running and write, harness, re-read, record, gates, write, append
// the log line), interleaved with the floor. A tick writes the state twice
// by design (the current_tick mark before the harness, the result after),
// but the first skips the directory fsync and the log line is not fsynced
// (doc.go, Caveats): the ratio is about 1.9, the floor plus an atomic replace
// with one fsync and an append.
func BenchmarkTickVsFloor(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			f := newFloor(b, benchLoop(b)) // first: it skips where there is no raw floor
			l := benchLoop(b, m.opts...)
			var op, floor time.Duration
			for b.Loop() {
				t0 := time.Now()
				f.op(b, m.sync)
				t1 := time.Now()
				if _, err := l.Tick(context.Background(), TriggerManual, noop); err != nil {
					b.Fatal(err)
				}
				op += time.Since(t1)
				floor += t1.Sub(t0)
			}
			report(b, "tick", op, floor)
		})
	}
}

// BenchmarkTickCommandOverhead runs a tick whose harness is the program
// true(1) through harness.Command (process group, lock hand-over, last-line reader,
// timeout watch) and, interleaved, true(1) alone through os/exec, and
// reports the tick's time beyond the bare process (overhead-ns/op) and that
// overhead over the floor.
func BenchmarkTickCommandOverhead(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1)")
	}
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			f := newFloor(b, benchLoop(b)) // first: it skips where there is no raw floor
			l := benchLoop(b, m.opts...)
			cmd := NewCommandHarness(path, nil, 0)
			var tick, bare, floor time.Duration
			for b.Loop() {
				t0 := time.Now()
				f.op(b, m.sync)
				t1 := time.Now()
				if err := exec.Command(path).Run(); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if rec, err := l.Tick(context.Background(), TriggerManual, cmd); err != nil || rec.Outcome != OK {
					b.Fatal(rec, err)
				}
				tick += time.Since(t2)
				bare += t2.Sub(t1)
				floor += t1.Sub(t0)
			}
			n := float64(b.N)
			b.ReportMetric(float64(tick.Nanoseconds())/n, "tick-ns/op")
			b.ReportMetric(float64(bare.Nanoseconds())/n, "bare-exec-ns/op")
			b.ReportMetric(float64((tick-bare).Nanoseconds())/n, "overhead-ns/op")
			b.ReportMetric(float64(floor.Nanoseconds())/n, "floor-ns/op")
			b.ReportMetric(float64(tick-bare)/float64(floor), "overhead/floor")
		})
	}
}

// copyCodec hands fn a copy of the bytes, so that a change to it is a change.
type copyCodec struct{}

func (copyCodec) Decode(data []byte) (*[]byte, error) { c := bytes.Clone(data); return &c, nil }
func (copyCodec) Encode(data *[]byte) ([]byte, error) { return *data, nil }

// BenchmarkCodec is the CPU cost of reading and writing a state: Decode
// (validate, scan, check the invariants) and Encode of a changed Doc.
func BenchmarkCodec(b *testing.B) {
	d, _ := New("bench", time.Now(), Template{Name: "bench", Gates: Gates{MaxTicks: i64(20), BudgetUSD: f64(5)}})
	data := []byte(d.canonical())
	b.SetBytes(int64(len(data)))
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := (codec{}).Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode+pause+encode", func(b *testing.B) {
		now := time.Now()
		for b.Loop() {
			d, _ := codec{}.Decode(data)
			d.pause(now, "a", "b")
			if _, err := (codec{}).Encode(d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
