//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/benchkit"
	"github.com/gofrs/flock"
)

const (
	rowContendFloor    = "floor (open+flock, read, renameio, dir fsync)"
	rowContendGofrs    = "gofrs/flock + read + renameio + dir fsync"
	rowContendFiletxn  = "filetxn Store.Mutate"
	rowContendUnlocked = "unlocked control (read + renameio + dir fsync)"
)

// childEnv names the row a re-executed child runs; its presence makes main
// (and TestMain) run contendChild instead.
const childEnv = "FILETXN_BENCH_CONTEND_ROW"

var bgCtx = context.Background()

// contendRoundsPer is how many rounds the contend section runs for each
// round of the others: a round is short (a few hundred milliseconds) and its
// throughput swings with how the scheduler happens to hand the lock around,
// so its median needs more rounds to settle.
const contendRoundsPer = 3

// errLost is returned when a locked row of the contend section ends short of
// its count.
var errLost = errors.New("updates lost")

// The counter file every contend row increments: a decimal number and a
// newline. counterCodec is its filetxn.Codec.
type counter struct{ n int }

type counterCodec struct{}

func (counterCodec) Decode(b []byte) (*counter, error) {
	n, err := parseCounter(b)
	return &counter{n}, err
}

func (counterCodec) Encode(c *counter) ([]byte, error) { return formatCounter(c.n), nil }

func parseCounter(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return strconv.Atoi(string(bytes.TrimSuffix(b, []byte("\n"))))
}

func formatCounter(n int) []byte { return append(strconv.AppendInt(nil, int64(n), 10), '\n') }

// increments returns the row's one durable increment of the counter at path.
func increments(row, path string) (func() error, error) {
	lockPath := path + ".lock"
	readWrite := func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n, err := parseCounter(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return floorReplace(path, formatCounter(n+1))
	}
	switch row {
	case rowContendFloor:
		return func() error {
			unlock, err := floorLock(lockPath)
			if err != nil {
				return err
			}
			defer unlock()
			return readWrite()
		}, nil
	case rowContendGofrs:
		return func() error {
			f := flock.New(lockPath)
			if err := f.Lock(); err != nil {
				return err
			}
			defer f.Unlock()
			return readWrite()
		}, nil
	case rowContendFiletxn:
		s, err := filetxn.NewStore(path, filetxn.Codec[*counter](counterCodec{}))
		if err != nil {
			return nil, err
		}
		return func() error {
			_, err := s.Mutate(bgCtx, func(c *counter) error { c.n++; return nil })
			return err
		}, nil
	case rowContendUnlocked:
		return readWrite, nil
	}
	return nil, fmt.Errorf("no contend row %q", row)
}

// contendChild is a re-executed process of the contend section: it prepares
// its row, says "ready", waits for a byte on stdin (so that every process
// starts at once), makes its increments and says "done <mallocs> <bytes>".
func contendChild() int {
	row, path := os.Getenv(childEnv), os.Getenv("FILETXN_BENCH_CONTEND_PATH")
	n, err := strconv.Atoi(os.Getenv("FILETXN_BENCH_CONTEND_N"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "contend child:", err)
		return 2
	}
	inc, err := increments(row, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contend child:", err)
		return 1
	}
	fmt.Println("ready")
	if _, err := io.ReadFull(os.Stdin, make([]byte, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "contend child: waiting for the start:", err)
		return 1
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if err := inc(); err != nil {
			fmt.Fprintln(os.Stderr, "contend child:", err)
			return 1
		}
	}
	runtime.ReadMemStats(&after)
	fmt.Println("done", after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc)
	return 0
}

type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr bytes.Buffer // written by os/exec until Wait returns
}

// fail ends c (if it still runs) and returns an error with what it last
// said, why, and its stderr, read once Wait has returned.
func (c *child) fail(why string) error {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	return fmt.Errorf("contend child: %s (its last line %q), stderr %q", why, c.lines.Text(), c.stderr.String())
}

// contendOnce runs procs processes of row, n increments each, on a fresh
// counter, and returns the wall time from the common start to the last
// child's report that it is done (its exit, the same for every row, is not
// timed), the counter's final value and the children's allocations.
func contendOnce(cfg *config, row string, procs, n int) (elapsed time.Duration, final int, mallocs, heap uint64, err error) {
	d, err := os.MkdirTemp(cfg.dir, "contend-")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer os.RemoveAll(d)
	path := filepath.Join(d, "counter")
	if err := os.WriteFile(path, formatCounter(0), 0o644); err != nil {
		return 0, 0, 0, 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	children := make([]*child, procs)
	defer func() {
		for _, c := range children {
			if c != nil && c.cmd.Process != nil && c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	}()
	for i := range children {
		c := &child{cmd: exec.Command(exe, cfg.childArgs...)}
		c.cmd.Env = append(os.Environ(), childEnv+"="+row, "FILETXN_BENCH_CONTEND_PATH="+path, "FILETXN_BENCH_CONTEND_N="+strconv.Itoa(n))
		c.cmd.Stderr = &c.stderr
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			return 0, 0, 0, 0, err
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			return 0, 0, 0, 0, err
		}
		c.lines = bufio.NewScanner(out)
		if err := c.cmd.Start(); err != nil {
			return 0, 0, 0, 0, err
		}
		children[i] = c
	}
	for _, c := range children {
		if !c.lines.Scan() || c.lines.Text() != "ready" {
			return 0, 0, 0, 0, c.fail("did not get ready")
		}
	}
	start := time.Now()
	for _, c := range children {
		c.stdin.Write([]byte{1})
		c.stdin.Close()
	}
	// Each child's "done" line is read as soon as it is written, whatever
	// the order the children finish in: once the last one is read, the
	// work is over.
	for _, c := range children {
		var m, h uint64
		if !c.lines.Scan() {
			return 0, 0, 0, 0, c.fail(fmt.Sprintf("ended without saying done: %v", c.cmd.Wait()))
		}
		if _, err := fmt.Sscanf(c.lines.Text(), "done %d %d", &m, &h); err != nil {
			return 0, 0, 0, 0, c.fail("said something else than done")
		}
		mallocs += m
		heap += h
	}
	elapsed = time.Since(start)
	for _, c := range children {
		if err := c.cmd.Wait(); err != nil {
			return 0, 0, 0, 0, c.fail(err.Error())
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	final, err = parseCounter(data)
	if err == nil && !bytes.Equal(data, formatCounter(final)) {
		err = fmt.Errorf("%s = %q, not a counter's bytes", path, data)
	}
	return elapsed, final, mallocs, heap, err
}

// runContend measures procs processes making n increments each of one
// counter file. Every locked row must end at procs*n, the same bytes
// filetxn publishes; the unlocked control must lose updates in every round,
// or the section measured no contention and the run fails.
func runContend(cfg *config) (*section, error) {
	procs, n := cfg.contendProcs, cfg.contendIncrements
	total := procs * n
	sec := &section{Key: "contend", Throughput: true,
		Title: fmt.Sprintf("%d processes x %d durable increments of one counter file", procs, n)}
	names := []string{rowContendFloor, rowContendGofrs, rowContendFiletxn, rowContendUnlocked}
	for i, name := range names {
		sec.Rows = append(sec.Rows, &result{Row: benchkit.Row{Name: name, Ref: i == 0}, measured: name == rowContendFiletxn})
	}
	var lost []int
	err := sec.Interleave(cfg.rounds*contendRoundsPer, func(r *result) (float64, error) {
		elapsed, final, m, h, err := contendOnce(cfg, r.Name, procs, n)
		if err != nil {
			return 0, err
		}
		if r.Name == rowContendUnlocked {
			if final >= total {
				return 0, fmt.Errorf("the unlocked control lost no update (%d of %d): the section measured no contention", final, total)
			}
			lost = append(lost, total-final)
		} else if final != total {
			return 0, fmt.Errorf("%w: counter = %d after %d increments, want %d", errLost, final, total, total)
		}
		if r.measured {
			r.mallocs += m
			r.heap += h
			r.ops += total
		}
		return float64(total) / elapsed.Seconds(), nil
	})
	if r := sec.Row(rowContendUnlocked); r != nil {
		r.Note = benchkit.LostNote(lost, total)
	}
	return sec, err
}
