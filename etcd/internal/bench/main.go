// Command bench measures the etcd backend: filetxn's durable Mutate on
// etcd against the read-modify-write a user would write by hand (a Get,
// then a Txn that puts only if the mod revision is unchanged, retried) and
// against etcd's own concurrency.NewSTM; the same under contention, with
// processes that increment one document at once (no increment may be
// lost); and ledger.Store.Append on local files against the same on etcd.
// Every section runs on a one-member and a three-member cluster of real
// etcd processes on this host, started for the run; the variants of a
// section are interleaved in rounds, and each row is a ratio to the
// section's reference in the same round (median and quartiles).
//
// Usage, from the etcd directory of the repository:
//
//	go run ./internal/bench [-rounds N] [-ops N] [-procs N] [-fsync=false] [-md ../BENCHMARKS.md -svg ../docs/bench]
//
// Without -md it prints the tables; with -md it writes them into the etcd
// section of that Markdown file (between its markers, or at its end), and
// with -svg charts of the mutate and contend sections (etcd.svg,
// etcd-contend.svg). It needs a Unix.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/filetxn/filetxn/etcd/internal/cluster"
	"github.com/filetxn/filetxn/internal/benchkit"
)

// config holds the flags.
type config struct {
	dir        string // the scratch directory: the members' data and the files' ledger
	rounds     int
	ops        int // increments per row and round, uncontended
	procs      int
	contendOps int // increments per process and round
	entries    int // of the ledger
	ledgerOps  int // appends per row and round
	fsync      bool
	sections   []string
	heartbeat  time.Duration
	election   time.Duration
}

var allSections = []string{"mutate", "contend", "ledger"}

func main() {
	dispatch()
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", err)
		os.Exit(1)
	}
}

// dispatch runs a cluster member or a contending process, and exits, when
// the binary was started as one; otherwise it returns.
func dispatch() {
	cluster.RunMember()
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(contendChild(spec))
	}
}

func run(args []string, stdout *os.File) error {
	fs := flag.NewFlagSet("etcdbench", flag.ContinueOnError)
	var cfg config
	var sections, mdPath, svgDir string
	fs.StringVar(&cfg.dir, "dir", ".", "make the scratch directory (members' data, the files' ledger) under `dir`")
	fs.IntVar(&cfg.rounds, "rounds", 11, "interleaved rounds per section")
	fs.IntVar(&cfg.ops, "ops", 50, "increments per row and round, uncontended")
	fs.IntVar(&cfg.procs, "procs", 8, "contending processes")
	fs.IntVar(&cfg.contendOps, "contend-ops", 25, "increments per process and round, contended")
	fs.IntVar(&cfg.entries, "entries", 100, "entries of the ledger")
	fs.IntVar(&cfg.ledgerOps, "ledger-ops", 20, "appends per row and round")
	fs.BoolVar(&cfg.fsync, "fsync", true, "members fsync (false: etcd's --unsafe-no-fsync, as the tests' members)")
	fs.DurationVar(&cfg.heartbeat, "heartbeat", 100*time.Millisecond, "members' heartbeat interval")
	fs.DurationVar(&cfg.election, "election", time.Second, "members' election timeout")
	fs.StringVar(&sections, "sections", strings.Join(allSections, ","), "comma-separated `list` of sections")
	fs.StringVar(&mdPath, "md", "", "write the tables into the etcd section of Markdown `file`")
	fs.StringVar(&svgDir, "svg", "", "write etcd.svg and etcd-contend.svg, charts of the mutate and contend sections, into `dir`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if cfg.sections, err = benchkit.SelectSections(sections, allSections); err != nil {
		return err
	}
	if cfg.rounds < 1 || cfg.ops < 1 || cfg.procs < 2 || cfg.contendOps < 1 || cfg.entries < 1 || cfg.ledgerOps < 1 {
		return fmt.Errorf("counts must be positive, and -procs at least 2")
	}
	scratch, err := os.MkdirTemp(cfg.dir, ".etcdbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	cfg.dir = scratch
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	rep := &report{start: time.Now(), machine: describeMachine(scratch), command: strings.TrimSpace("cd etcd && go run ./internal/bench " + strings.Join(args, " "))}
	var targets []*target
	for _, n := range []int{1, 3} {
		dir := filepath.Join(scratch, fmt.Sprintf("cluster-%d", n))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		c, err := cluster.Start(n, cluster.Config{Dir: dir,
			Fsync: cfg.fsync, Heartbeat: cfg.heartbeat, Election: cfg.election})
		if err != nil {
			return err
		}
		defer c.Close()
		t := &target{name: fmt.Sprintf("%d member", n), endpoints: c.Endpoints()}
		if n > 1 {
			t.name += "s"
		}
		if t.admin, err = dial(t.endpoints); err != nil {
			return err
		}
		defer t.admin.Close()
		targets = append(targets, t)
	}
	add := func(s *section, err error) error {
		if err == nil {
			rep.sections = append(rep.sections, s)
			fmt.Fprint(stdout, style.Text(s))
		}
		return err
	}
	for _, name := range cfg.sections {
		switch name {
		case "mutate":
			for _, t := range targets {
				if err := add(runMutate(ctx, &cfg, t)); err != nil {
					return err
				}
			}
		case "contend":
			for _, t := range targets {
				if err := add(runContend(ctx, &cfg, t)); err != nil {
					return err
				}
			}
		case "ledger":
			if err := add(runLedger(ctx, &cfg, targets)); err != nil {
				return err
			}
		}
	}
	rep.took = time.Since(rep.start)
	fmt.Fprintf(stdout, "\n%s", benchkit.TargetText(rep.targets(targets)))
	if mdPath != "" {
		if err := benchkit.ReplaceBetween(mdPath, beginMarker, endMarker, rep.markdown(&cfg, targets)); err != nil {
			return err
		}
	}
	if svgDir != "" {
		charts := []struct{ file, kind, title string }{
			{"etcd.svg", "mutate", "One durable read-modify-write on etcd: median time per operation (ratio to the hand-written row)"},
			{"etcd-contend.svg", "contend", fmt.Sprintf("%d processes incrementing one document on etcd: median throughput (ratio to STM)", cfg.procs)},
		}
		for _, c := range charts {
			if err := os.WriteFile(filepath.Join(svgDir, c.file), rep.chartSVG(targets, c.kind, c.title), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// The etcd section of BENCHMARKS.md lies between these markers; what
// follows the end marker is written by people, and kept.
const (
	beginMarker = "<!-- etcd benchmark: written by etcd/internal/bench from here -->"
	endMarker   = "<!-- etcd benchmark: to here; the notes below are kept -->"
)

// machine describes where a run ran: the host and the library's commit
// (benchkit.Describe of the repository, which holds the etcd directory),
// and the file system of the scratch directory (benchkit.Mount).
type machine struct {
	benchkit.Machine
	fsys string
}

func describeMachine(dir string) machine {
	m := machine{Machine: benchkit.Describe("."), fsys: benchkit.Mount(dir)}
	if m.fsys == "" {
		m.fsys = "unknown file system"
	}
	return m
}
