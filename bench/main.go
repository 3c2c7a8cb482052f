//go:build unix

// Command peers is filetxn's peer benchmark: it measures the library's
// lock, transaction, group, contention, scaling and multi-file commit costs against the
// primitives and stores a user would pick instead (raw flock, gofrs/flock,
// lockedfile, the renameio floor, SQLite, bbolt), interleaved in rounds on
// one disk, and reports each row as a ratio to its section's reference in
// the same round (median and quartiles over the rounds).
//
// Usage, from the bench directory of the repository:
//
//	go run . [-rounds N] [-sections lock,txn,group,contend,scaling,commit,dirsize] [-runs N] [-md ../BENCHMARKS.md -svg ../docs/bench]
//
// Without -md it prints the tables; with -md it writes them, the machine
// and the command as a Markdown file, and with -svg the charts of the
// scaling curve and the group throughput. It needs a Unix (flock).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/filetxn/filetxn/internal/benchkit"
)

// config holds the flags: how much of each section a run measures.
type config struct {
	dir               string // scratch directory, on the file system measured
	rounds            int
	sections          []string
	lockOps           int
	txnOps            int
	scalingOps        int
	scalingSizes      []int
	groupGoroutines   int
	groupAppends      int
	contendProcs      int
	contendIncrements int
	commitOps         int
	childArgs         []string // arguments a re-executed contend child gets
}

// notesHeading starts the part of BENCHMARKS.md that people write and a
// new run keeps.
const notesHeading = "## Notes"

var allSections = []string{"lock", "txn", "group", "contend", "scaling", "commit", "dirsize"}

func main() {
	if os.Getenv(childEnv) != "" {
		os.Exit(contendChild())
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	var cfg config
	var sections, sizes, mdPath, svgDir string
	var runs int
	fs.StringVar(&cfg.dir, "dir", ".", "make the scratch directory under `dir` (its file system is the one measured)")
	fs.IntVar(&cfg.rounds, "rounds", 11, "interleaved rounds per section (the contend section runs three times as many)")
	fs.StringVar(&sections, "sections", strings.Join(allSections, ","), "comma-separated `list` of sections to run")
	fs.IntVar(&cfg.lockOps, "lock-ops", 5000, "lock round trips per row and round")
	fs.IntVar(&cfg.txnOps, "txn-ops", 50, "durable appends per row and round in the txn section")
	fs.IntVar(&cfg.scalingOps, "scaling-ops", 10, "durable appends per row, size and round in the scaling section")
	fs.StringVar(&sizes, "scaling-sizes", "10,100,1000,10000,100000", "ledger `sizes` (entries) of the scaling section")
	fs.IntVar(&cfg.groupGoroutines, "group-goroutines", 8, "goroutines of the group section")
	fs.IntVar(&cfg.groupAppends, "group-appends", 100, "durable appends per goroutine in the group section")
	fs.IntVar(&cfg.contendProcs, "contend-procs", 4, "processes of the contend section")
	fs.IntVar(&cfg.contendIncrements, "contend-increments", 150, "increments per process in the contend section")
	fs.IntVar(&cfg.commitOps, "commit-ops", 50, fmt.Sprintf("steps per row and round in the commit section (at most %d)", commitEntries))
	fs.IntVar(&runs, "runs", 1, "consecutive runs of every section (each gets its own tables)")
	fs.StringVar(&mdPath, "md", "", "write the report as Markdown to `file` (BENCHMARKS.md)")
	fs.StringVar(&svgDir, "svg", "", "write scaling.svg, group.svg and commit.svg (from the last run) into `dir`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if cfg.sections, err = benchkit.SelectSections(sections, allSections); err != nil {
		return err
	}
	for _, f := range strings.Split(sizes, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			return fmt.Errorf("-scaling-sizes: %q is not a positive size", f)
		}
		cfg.scalingSizes = append(cfg.scalingSizes, n)
	}
	if cfg.rounds < 1 || runs < 1 || cfg.lockOps < 1 || cfg.txnOps < 1 || cfg.scalingOps < 1 ||
		cfg.groupGoroutines < 1 || cfg.groupAppends < 1 || cfg.contendProcs < 2 || cfg.contendIncrements < 1 || cfg.commitOps < 1 {
		return fmt.Errorf("counts must be positive, and -contend-procs at least 2")
	}
	scratch, err := os.MkdirTemp(cfg.dir, ".peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	cfg.dir = scratch
	m := machine{Machine: benchkit.Describe(".."), fsys: fileSystem(scratch),
		command: strings.TrimSpace("cd bench && go run . " + strings.Join(args, " "))}
	var reports []*report
	for i := range runs {
		rep, err := runOnce(&cfg)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		reports = append(reports, rep)
		fmt.Print(rep.text(i+1, runs))
	}
	if mdPath != "" {
		// The "## Notes" section of an existing report is written by people
		// (what was tried, what stands in the way): keep it.
		if err := benchkit.ReplaceAbove(mdPath, notesHeading, markdown(m, &cfg, reports)); err != nil {
			return err
		}
	}
	if svgDir != "" {
		last := reports[len(reports)-1]
		if sec := last.sections.Find("scaling"); sec != nil {
			if err := os.WriteFile(filepath.Join(svgDir, "scaling.svg"), scalingSVG(sec, cfg.scalingSizes), 0o644); err != nil {
				return err
			}
		}
		if sec := last.sections.Find("group"); sec != nil {
			if err := os.WriteFile(filepath.Join(svgDir, "group.svg"), groupSVG(sec), 0o644); err != nil {
				return err
			}
		}
		if sec := last.sections.Find("commit"); sec != nil {
			if err := os.WriteFile(filepath.Join(svgDir, "commit.svg"), commitSVG(sec), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// A report is one run: its sections in order, and when it ran.
type report struct {
	start    time.Time
	took     time.Duration
	sections benchkit.Sections[*result]
}

// A machine is where the benchmark ran: the host and the library's commit
// (benchkit.Describe of the repository, the directory above bench/), the
// file system measured, and the command that ran it.
type machine struct {
	benchkit.Machine
	fsys, command string
}

func runOnce(cfg *config) (*report, error) {
	rep := &report{start: time.Now()}
	add := func(s *section, err error) error {
		if err != nil {
			return err
		}
		rep.sections = append(rep.sections, s)
		return nil
	}
	for _, name := range cfg.sections {
		var err error
		switch name {
		case "lock":
			err = add(runLock(cfg))
		case "txn":
			names := []string{rowFloor, rowSQLiteRollbak, rowSQLiteWAL, rowBolt, rowFiletxn}
			for _, n := range []int{100, 10000} {
				if err = add(runTxn(cfg, fmt.Sprintf("txn-%d", n), fmt.Sprintf("One durable append, %s-entry ledger", thousands(n)), n, names, cfg.txnOps)); err != nil {
					break
				}
			}
		case "commit":
			err = add(runCommit(cfg))
		case "dirsize":
			err = add(runDirSize(cfg))
		case "group":
			err = add(runGroup(cfg))
		case "contend":
			err = add(runContend(cfg))
		case "scaling":
			var sec *section
			sec, err = runScaling(cfg)
			err = add(sec, err)
		}
		if err != nil {
			return nil, err
		}
	}
	rep.took = time.Since(rep.start)
	return rep, nil
}

// runScaling measures one durable append at each size, filetxn against the
// floor, and folds the sizes into one section whose rows are "row @ size".
func runScaling(cfg *config) (*section, error) {
	all := &section{Key: "scaling", Title: "One durable append by ledger size"}
	for _, n := range cfg.scalingSizes {
		sec, err := runTxn(cfg, "scaling", "", n, []string{rowFloor, rowFiletxn}, cfg.scalingOps)
		if err != nil {
			return nil, err
		}
		for _, r := range sec.Rows {
			r.Name = fmt.Sprintf("%s @ %s", r.Name, thousands(n))
			all.Rows = append(all.Rows, r)
		}
	}
	return all, nil
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
