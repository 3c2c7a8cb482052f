// Package benchkit is what the repository's two benchmark commands share:
// the peer benchmark (module bench/) and the etcd module's benchmark
// (etcd/internal/bench). It holds their rows and sections, the rounds that
// interleave a section's rows, the median and quartiles of a row's ratios
// to its section's reference, the Markdown tables, terminal columns and
// SVG bar charts they render, the targets they check, the description of
// the machine and of the mount measured, and the rewrite of the part of
// BENCHMARKS.md a command owns.
//
// A benchmark defines its own row type, which embeds [Row] and adds the
// columns only it measures (allocations, gRPC requests), and a [Style]
// that says how its tables print those columns; [Section] is generic over
// that row type, so a benchmark's callbacks get its own rows back.
//
// # Guarantees
//
//   - The text it renders is a pure function of the rows: the same rows
//     give the same bytes, so a change here shows in both reports at once.
//   - [ReplaceAbove] and [ReplaceBetween] keep every byte of the file
//     outside the part they own.
//
// # Caveats
//
//   - Nothing outside the benchmark commands imports it; it is not part of
//     the library and its API changes with the reports.
//   - [Describe] reads /proc/cpuinfo and runs uname and git: on a system
//     without them the fields say "unknown". [Mount] reads
//     /proc/self/mounts, which only Linux has.
//   - Rows and sections are not safe for concurrent use: a section's rounds
//     run one row at a time, on the caller's goroutine.
package benchkit
