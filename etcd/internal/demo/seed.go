package demo

import (
	"fmt"
	"strings"

	"github.com/filetxn/filetxn/board"
)

// The names of the demo's documents in etcd: the paths a BMAD project
// keeps them at, relative, so that every host names the same document.
const (
	ledgerName = "project/_bmad-output/implementation-artifacts/deferred-work.md"
	boardName  = "project/_bmad-output/implementation-artifacts/sprint-status.yaml"
	loopRoot   = "project/.looprunner" // the loops' root: loopstate.NewRoot's dir, naming the loop's documents
	loopName   = "demo"                // the loop every worker ticks
)

// contended is the seeded open entry that every worker tries to close in
// its first round: exactly one of them closes it.
const contended = "DW-3"

// seedLedger is the ledger the demo starts from: a preamble, entries open
// and closed, and prose that mentions an id no entry has yet (so the first
// id the workers mint is DW-10).
const seedLedger = "# Deferred Work\n" +
	"\n" +
	"Findings from code reviews that were real but out of scope for the story\n" +
	"under review; DW-9 was withdrawn before it was written down.\n" +
	"\n" +
	"### DW-1: Webhook retries ignore Retry-After\n" +
	"origin: code review of spec-2-4.md\n" +
	"location: internal/hooks/retry.go:61\n" +
	"source_spec: `spec-2-4.md`\n" +
	"severity: medium\n" +
	"reason: the retry policy is being rewritten\n" +
	"status: done 2026-11-20\n" +
	"resolution: honoured since the rewrite\n" +
	"\n" +
	"### DW-2: Audit log timestamps are local time\n" +
	"origin: code review of spec-1-5.md\n" +
	"location: internal/audit/log.go:33\n" +
	"source_spec: `spec-1-5.md`\n" +
	"severity: low\n" +
	"reason: needs a migration of the stored rows\n" +
	"status: open\n" +
	"\n" +
	"### DW-3: Export jobs never time out\n" +
	"origin: code review of spec-3-1.md\n" +
	"location: internal/export/job.go:118\n" +
	"source_spec: `spec-3-1.md`\n" +
	"severity: high\n" +
	"reason: out of scope for the job skeleton\n" +
	"status: open\n"

// demoStories are the board's story keys: three epics of four stories.
func demoStories() []string {
	slugs := [][]string{
		{"login-form", "password-reset", "session-expiry", "audit-log"},
		{"webhook-config", "webhook-retries", "webhook-signing", "delivery-log"},
		{"csv-export", "export-queue", "export-timeouts", "export-retention"},
	}
	var keys []string
	for e, ss := range slugs {
		for i, s := range ss {
			keys = append(keys, fmt.Sprintf("%d-%d-%s", e+1, i+1, s))
		}
	}
	return keys
}

// demoTargets are the statuses a worker asks a story to move to.
var demoTargets = []board.Status{board.ReadyForDev, board.InProgress, board.Review, board.Done}

// seedBoard is the board the demo starts from: every story in backlog.
func seedBoard() []byte {
	var b strings.Builder
	b.WriteString("# generated: 2026-11-30\n# project: acme-hooks\n# tracking_system: file-system\n")
	b.WriteString("last_updated: 2026-11-30 09:00:00\n\n")
	b.WriteString("development_status:\n")
	epic := ""
	for _, k := range demoStories() {
		if e := k[:strings.IndexByte(k, '-')]; e != epic {
			if epic != "" {
				fmt.Fprintf(&b, "  epic-%s-retrospective: optional\n\n", epic)
			}
			epic = e
			fmt.Fprintf(&b, "  epic-%s: backlog\n", epic)
		}
		fmt.Fprintf(&b, "  %s: backlog\n", k)
	}
	fmt.Fprintf(&b, "  epic-%s-retrospective: optional\n", epic)
	return []byte(b.String())
}

// seedStatuses is the status of every story of seedBoard.
func seedStatuses() map[string]board.Status {
	m := map[string]board.Status{}
	for _, k := range demoStories() {
		m[k] = board.Backlog
	}
	return m
}

// demoTitle is the title of the entry worker w appends in round r: unique
// to the pair, and free of ids (see package lin).
func demoTitle(w, r int) string {
	topics := []string{
		"Retry transient SMTP failures", "Paginate the export list", "Cache webhook secrets",
		"Log the signing key's version", "Debounce the filter inputs", "Index delivery attempts",
	}
	return fmt.Sprintf("%s (host %d, round %d)", topics[(w+r)%len(topics)], w, r)
}
