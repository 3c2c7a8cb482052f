// Command contend shows what filetxn is for: several processes increment one
// counter file at the same time, first naively (read, add one, write), then
// through filetxn.Store.Mutate. The naive run loses updates; the filetxn run
// never does.
//
//	go run ./examples/contend [-procs 4] [-n 200] [-dir DIR]
//
// It exits non-zero if the filetxn run lost or duplicated an update.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/filetxn/filetxn"
)

type counterCodec struct{}

func (counterCodec) Decode(data []byte) (*int, error) {
	n := 0
	if len(data) > 0 {
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return nil, err
		}
	}
	return &n, nil
}

func (counterCodec) Encode(n *int) ([]byte, error) {
	if *n == 0 {
		return nil, nil
	}
	return []byte(strconv.Itoa(*n) + "\n"), nil
}

func main() {
	os.Exit(cli(os.Args[1:]))
}

// cli runs the command line args and returns the exit code: 0 done (or help
// asked for, printed on stdout), 1 a run that failed or lost an update
// through filetxn, 2 a usage error (one line on stderr).
func cli(args []string) int {
	fs := flag.NewFlagSet("contend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	procs := fs.Int("procs", 4, "the number `N` of worker processes")
	n := fs.Int("n", 200, "`M` increments per process")
	dir := fs.String("dir", "", "keep the files in `DIR` (default: a temporary directory, removed at the end)")
	worker := fs.String("worker", "", "internal: run as a worker in this mode (naive or filetxn)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Println("usage: contend [-procs N] [-n M] [-dir DIR]")
			fmt.Println("\nrace processes on one counter file, naively and through filetxn, and count the updates lost")
			fmt.Println("\nflags:")
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fs.VisitAll(func(f *flag.Flag) {
				if strings.HasPrefix(f.Usage, "internal:") {
					return
				}
				name, usage := flag.UnquoteUsage(f)
				if f.DefValue != "" {
					usage += " (default " + f.DefValue + ")"
				}
				fmt.Fprintf(tw, "  -%s %s\t%s\n", f.Name, name, usage)
			})
			tw.Flush()
			return 0
		}
		fmt.Fprintln(os.Stderr, "contend:", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "contend: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *worker == "" && (*procs < 1 || *n < 1) {
		fmt.Fprintln(os.Stderr, "contend: -procs and -n must be at least 1")
		return 2
	}
	if err := run(*procs, *n, *dir, *worker); err != nil {
		fmt.Fprintln(os.Stderr, "contend:", err)
		return 1
	}
	return 0
}

func run(procs, n int, dir, worker string) error {
	if worker != "" {
		return work(worker, dir, n)
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "filetxn-contend-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	want := procs * n
	fmt.Printf("%d processes x %d increments of one counter file (want %d)\n\n", procs, n, want)
	fmt.Printf("%-10s %8s %8s %10s\n", "mode", "count", "lost", "elapsed")
	ok := true
	for _, mode := range []string{"naive", "filetxn"} {
		got, elapsed, err := race(mode, dir, procs, n)
		if err != nil {
			return err
		}
		fmt.Printf("%-10s %8d %8d %10s\n", mode, got, want-got, elapsed.Round(time.Millisecond))
		if mode == "filetxn" && got != want {
			ok = false
		}
	}
	if !ok {
		return errors.New("filetxn lost updates")
	}
	fmt.Println("\nfiletxn kept every update; the naive read-modify-write did not.")
	return nil
}

// race starts procs workers of this same binary in mode and returns the final count.
func race(mode, dir string, procs, n int) (int, time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	path := filepath.Join(dir, mode+".txt")
	os.Remove(path)
	start := time.Now()
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = exec.Command(exe, "-worker", mode, "-dir", dir, "-n", strconv.Itoa(n))
		cmds[i].Stderr = os.Stderr
		if err := cmds[i].Start(); err != nil {
			return 0, 0, err
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			return 0, 0, fmt.Errorf("worker: %w", err)
		}
	}
	elapsed := time.Since(start)
	got, err := counterCodec{}.Decode(must(os.ReadFile(path)))
	if err != nil {
		return 0, 0, err
	}
	return *got, elapsed, nil
}

func must(b []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return b
}

func work(mode, dir string, n int) error {
	path := filepath.Join(dir, mode+".txt")
	switch mode {
	case "naive":
		for range n {
			b, _ := os.ReadFile(path)
			v, err := counterCodec{}.Decode(b)
			if err != nil { // a torn read: another worker is mid-write
				v = new(int)
			}
			*v++
			out, _ := counterCodec{}.Encode(v)
			if err := os.WriteFile(path, out, 0o644); err != nil {
				return err
			}
		}
	case "filetxn":
		s, err := filetxn.NewStore[*int](path, counterCodec{}, filetxn.WithoutSync())
		if err != nil {
			return err
		}
		for range n {
			if _, err := s.Mutate(context.Background(), func(v *int) error { *v++; return nil }); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown worker mode %q", mode)
	}
	return nil
}
