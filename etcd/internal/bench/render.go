package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/filetxn/filetxn/internal/benchkit"
	"go.etcd.io/etcd/api/v3/version"
)

// A report is one run: its sections in order, where and when it ran.
type report struct {
	start    time.Time
	took     time.Duration
	machine  machine
	command  string
	sections benchkit.Sections[*result]
}

// targets returns the targets, checked against the run.
func (r *report) targets(ts []*target) []benchkit.Target {
	ratios := r.sections.Ratios
	var gs []benchkit.Target
	for _, t := range ts {
		gs = append(gs, benchkit.AtMost(fmt.Sprintf("one durable Mutate, %s (/ hand-written Get + Txn)", t.name), ratios("mutate-"+t.name, variantNames[varFiletxn]), 1.10))
	}
	for _, t := range ts {
		gs = append(gs, benchkit.AtLeast(fmt.Sprintf("contended throughput, %s (/ concurrency.NewSTM; 0 lost is checked)", t.name), ratios("contend-"+t.name, variantNames[varFiletxn]), 1.00))
	}
	return gs
}

// markdown renders the etcd section of BENCHMARKS.md.
func (r *report) markdown(cfg *config, ts []*target) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## The etcd backend\n\n")
	p("Written by the etcd module's benchmark, `etcd/internal/bench`, from one run (%s, %s). It starts\n", r.start.UTC().Format("2006-01-02 15:04 UTC"), r.took.Round(time.Second))
	p("a one-member and a three-member etcd cluster of real member processes on this host (etcd %s, embedded;\n", version.Version)
	p("heartbeat %s, election timeout %s; ", cfg.heartbeat, cfg.election)
	if cfg.fsync {
		p("members **fsync** as etcd does by default, so a write that returns\nsurvives a power loss of a quorum")
	} else {
		p("members run with `--unsafe-no-fsync`, as the tests' do: a write that returns survives the crash\nof a process, not a power loss")
	}
	p("), and runs every section on both. The rows of a section run interleaved in rounds\n(A B C, B C A, ...); each row is a ratio to its section's reference in the same round, given as the median and\nquartiles over the rounds. requests/op counts the gRPC requests the row's clients sent (every unary call, each\nretry included, and every message on a watch stream; not the lease's keep-alives), over all its rounds.\n")
	p("Every row's client goes to every member of its cluster (the etcd client balances its requests over them, and a\nfollower forwards a write to the leader). The members, the clients and the contending processes share this host's CPUs\nand one disk (%s): three members here pay for three fsyncs on one disk and for each other's CPU, which members on\nhosts of their own would not. Figures are from a shared, noisy machine: compare ratios.\n\n", r.machine.fsys)
	p("Reproduce:\n\n```sh\n%s\n```\n\n", r.command)
	b.WriteString(r.machine.Items(""))
	p("- Rounds per section: %d; uncontended: %d increments per row and round; contended: %d processes x %d increments;\n  ledger: %d appends to a %d-entry ledger per row and round\n\n", cfg.rounds, cfg.ops, cfg.procs, cfg.contendOps, cfg.ledgerOps, cfg.entries)
	p("The rows:\n\n")
	p("- *hand-written*: `Get` of the document, then `Txn(If(ModRevision = read), Then(Put))`, from the `Get` again if it\n  fails: the least a correct read-modify-write on etcd sends.\n")
	p("- *filetxn*: `filetxn.Store[*T].Mutate` with `filetxn.JSON` on `etcd.New(client, prefix)`: the lock, the read, the\n  fenced commit, which in the same transaction releases the lock if another session waits for it and keeps it\n  otherwise; uncontended, the session keeps its lock and the bytes it wrote, and each Mutate sends its commit\n  alone. Under contention a session that took the lock keeps it for a 10 ms run of Mutates before it hands it\n  over. Each row increments a document of its own: a kept lock's next Mutate would fail after a write made\n  without the lock, as another row's are.\n")
	p("- *hand-written locked*: the least a lock held across the function sends (`locked.go`): one `Txn` that queues this\n  lease's waiter key and reads the oldest waiter and the document, one `Txn` that writes the document only if the key\n  and the document's mod revision are as read, and deletes the key (concurrency.Mutex's queue, the backend's prefetch\n  and release folded in). A waiter watches the waiter keys (a watch made before it reads who is ahead, so the server\n  sends it each deletion at once), then reads the document; *woken with the document*, the watch also covers the\n  document's key and the waiter takes the document from the holder's commit instead of reading it.\n")
	p("- *STM*: `concurrency.NewSTM` with its default isolation (serializable snapshot), which runs its function again\n  after a conflict.\n")
	p("- *unfenced control*: `Get`, then an unconditional `Put`; under contention it must lose updates (shown), where every\n  other row must lose none: the counter's final value is checked after every round.\n")
	p("- *ledger*: `ledger.Store.Append` of one entry, in a local file (durable: fsync of the file and its directory) or on\n  etcd; after every round each row must hold the bytes the appends make on files.\n\n")
	p("![one durable read-modify-write on etcd](docs/bench/etcd.svg)\n![contended increments on etcd](docs/bench/etcd-contend.svg)\n\n")
	p("### Targets\n\n%s", benchkit.TargetTable([]string{"got"}, [][]benchkit.Target{r.targets(ts)}))
	for _, s := range r.sections {
		b.WriteString(style.Markdown(s))
	}
	p("\n")
	return b.Bytes()
}

// chartSVG draws the median value of each row of the sections keyed kind
// + "-" + a target's name as a horizontal bar (see benchkit.BarChart;
// filetxn's red), labelled with its ratio to its section's reference.
func (r *report) chartSVG(ts []*target, kind, title string) []byte {
	var bars []benchkit.Bar
	for _, t := range ts {
		if s := r.sections.Find(kind + "-" + t.name); s != nil {
			for _, b := range s.Bars(variantNames[varFiletxn], func(res *result) string { return style.Value(s, res) }) {
				b.Name = t.name + ": " + b.Name
				bars = append(bars, b)
			}
		}
	}
	return benchkit.BarChart(1080, 560, 150, title, bars)
}
