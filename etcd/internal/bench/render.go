package main

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"go.etcd.io/etcd/api/v3/version"
)

// A report is one run: its sections in order, where and when it ran.
type report struct {
	start    time.Time
	took     time.Duration
	machine  machine
	command  string
	sections []*section
}

func (r *report) section(key string) *section {
	for _, s := range r.sections {
		if s.key == key {
			return s
		}
	}
	return nil
}

// value formats a row's median value: time per operation, or throughput.
func (s *section) value(r *result) string {
	v := median(r.values)
	if s.throughput {
		return fmt.Sprintf("%.0f ops/s", v)
	}
	if v >= 1e6 {
		return fmt.Sprintf("%.2f ms", v/1e6)
	}
	return fmt.Sprintf("%.0f µs", v/1e3)
}

func (s *section) ratioHeader() string {
	if s.throughput {
		return "throughput ratio (higher is faster)"
	}
	return "time ratio (lower is faster)"
}

func (r *result) label() string {
	name := r.name
	if r.ref {
		name += " (reference)"
	}
	if r.note != "" {
		name += "; " + r.note
	}
	return name
}

// table renders the section as a Markdown table.
func (s *section) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| row | %s: median | quartiles | median | requests/op |\n|---|---:|---:|---:|---:|\n", s.ratioHeader())
	for _, r := range s.rows {
		q1, med, q3 := quartiles(r.ratios)
		fmt.Fprintf(&b, "| %s | %.2f | %.2f-%.2f | %s | %s |\n", r.label(), med, q1, q3, s.value(r), r.requestsPerOp())
	}
	return b.String()
}

// text renders the section as columns for a terminal.
func (s *section) text() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n%s (%s: median [quartiles], median value, requests/op)\n", s.title, s.ratioHeader())
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, r := range s.rows {
		q1, med, q3 := quartiles(r.ratios)
		fmt.Fprintf(w, "  %s\t%.2f\t[%.2f-%.2f]\t%s\t%s\n", r.label(), med, q1, q3, s.value(r), r.requestsPerOp())
	}
	w.Flush()
	for _, n := range s.notes {
		fmt.Fprintf(&b, "%s", n)
	}
	return b.String()
}

// A goal is one of the targets, checked against a run.
type goal struct {
	measure, want string
	got, q1, q3   float64
	met, known    bool
}

func (g goal) status() string {
	if !g.known {
		return "not measured in this run"
	}
	verdict := "NOT met"
	if g.met {
		verdict = "met"
	}
	return fmt.Sprintf("%.2f [%.2f-%.2f], want %s: %s", g.got, g.q1, g.q3, g.want, verdict)
}

func (r *report) targets(ts []*target) []goal {
	check := func(measure, key, row string, limit float64, atLeast bool) goal {
		g := goal{measure: measure, want: fmt.Sprintf("at most %.2f", limit)}
		if atLeast {
			g.want = fmt.Sprintf("at least %.2f", limit)
		}
		if s := r.section(key); s != nil {
			if res := s.row(row); res != nil && len(res.ratios) > 0 {
				g.q1, g.got, g.q3 = quartiles(res.ratios)
				g.known, g.met = true, g.got <= limit
				if atLeast {
					g.met = g.got >= limit
				}
			}
		}
		return g
	}
	var gs []goal
	for _, t := range ts {
		gs = append(gs, check(fmt.Sprintf("one durable Mutate, %s (/ hand-written Get + Txn)", t.name), "mutate-"+t.name, variantNames[varFiletxn], 1.10, false))
	}
	for _, t := range ts {
		gs = append(gs, check(fmt.Sprintf("contended throughput, %s (/ concurrency.NewSTM; 0 lost is checked)", t.name), "contend-"+t.name, variantNames[varFiletxn], 1.00, true))
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
	m := r.machine
	p("- CPUs: %d (%s)\n- Kernel: %s\n- Go: %s\n- Library measured: commit %s\n", m.cpus, m.cpu, m.kernel, m.goV, m.commit)
	p("- Rounds per section: %d; uncontended: %d increments per row and round; contended: %d processes x %d increments;\n  ledger: %d appends to a %d-entry ledger per row and round\n\n", cfg.rounds, cfg.ops, cfg.procs, cfg.contendOps, cfg.ledgerOps, cfg.entries)
	p("The rows:\n\n")
	p("- *hand-written*: `Get` of the document, then `Txn(If(ModRevision = read), Then(Put))`, from the `Get` again if it\n  fails: the least a correct read-modify-write on etcd sends.\n")
	p("- *filetxn*: `filetxn.Store[*T].Mutate` with `filetxn.JSON` on `etcd.New(client, prefix)`: the lock, the read, the\n  fenced commit, which in the same transaction releases the lock if another session waits for it and keeps it\n  otherwise; uncontended, the session keeps its lock, and each Mutate confirms it and reads the document in one\n  read-only Txn.\n")
	p("- *hand-written locked*: the least a lock held across the function sends (`locked.go`): one `Txn` that queues this\n  lease's waiter key and reads the oldest waiter and the document, one `Txn` that writes the document only if the key\n  and the document's mod revision are as read, and deletes the key (concurrency.Mutex's queue, the backend's prefetch\n  and release folded in). A waiter watches the waiter keys (a watch made before it reads who is ahead, so the server\n  sends it each deletion at once), then reads the document; *woken with the document*, the watch also covers the\n  document's key and the waiter takes the document from the holder's commit instead of reading it.\n")
	p("- *STM*: `concurrency.NewSTM` with its default isolation (serializable snapshot), which runs its function again\n  after a conflict.\n")
	p("- *unfenced control*: `Get`, then an unconditional `Put`; under contention it must lose updates (shown), where every\n  other row must lose none: the counter's final value is checked after every round.\n")
	p("- *ledger*: `ledger.Store.Append` of one entry, in a local file (durable: fsync of the file and its directory) or on\n  etcd; after every round each row must hold the bytes the appends make on files.\n\n")
	p("![one durable read-modify-write on etcd](docs/bench/etcd.svg)\n![contended increments on etcd](docs/bench/etcd-contend.svg)\n\n")
	p("### Targets\n\n| measure | want | got |\n|---|---|---|\n")
	for _, g := range r.targets(ts) {
		if !g.known {
			p("| %s | %s | - |\n", g.measure, g.want)
			continue
		}
		verdict := "not met"
		if g.met {
			verdict = "**met**"
		}
		p("| %s | %s | %.2f (%.2f-%.2f) %s |\n", g.measure, g.want, g.got, g.q1, g.q3, verdict)
	}
	for _, s := range r.sections {
		p("\n### %s\n\n%s", s.title, s.table())
		for _, n := range s.notes {
			p("\n%s\n", n)
		}
	}
	p("\n")
	return b.Bytes()
}

// The chart is hand-written SVG, in the look of the peer benchmark's.
const svgHead = `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<rect width="100%%" height="100%%" fill="white"/>
`

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// chartSVG draws the median value of each row of the sections keyed kind
// + "-" + a target's name as a horizontal bar (filetxn's red), labelled
// with its ratio to its section's reference.
func (r *report) chartSVG(ts []*target, kind, title string) []byte {
	type bar struct {
		name string
		res  *result
		sec  *section
	}
	var bars []bar
	for _, t := range ts {
		if s := r.section(kind + "-" + t.name); s != nil {
			for _, res := range s.rows {
				bars = append(bars, bar{name: t.name + ": " + res.name, res: res, sec: s})
			}
		}
	}
	const w, left, right, top, height, gap = 1080, 560, 150, 40, 22, 10
	h := top + len(bars)*(height+gap) + 30
	var b bytes.Buffer
	fmt.Fprintf(&b, svgHead, w, h, w, h)
	fmt.Fprintf(&b, "<text x=\"10\" y=\"22\" font-size=\"14\">%s</text>\n", esc(title))
	hi := 0.0
	for _, x := range bars {
		hi = max(hi, median(x.res.values))
	}
	for i, x := range bars {
		v := median(x.res.values)
		y := top + i*(height+gap)
		color := "#1f77b4"
		if x.res.name == variantNames[varFiletxn] {
			color = "#d62728"
		}
		bw := 0.0
		if hi > 0 {
			bw = v / hi * float64(w-left-right)
		}
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", left-8, y+height-6, esc(x.name))
		fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left, y, bw, height, color)
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%d\">%s (%.2fx)</text>\n", float64(left)+bw+6, y+height-6, x.sec.value(x.res), median(x.res.ratios))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
