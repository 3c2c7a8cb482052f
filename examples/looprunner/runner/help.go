package runner

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The help follows the conventions of go, gh and kubectl: asked for (-h,
// -help, --help, help) it goes to stdout with exit 0; a usage error is one
// line on stderr with exit 2 that says where the help is.

// help is "help [AREA [COMMAND]]": the usage of the binary, an area or a
// command, on stdout. The global flags may follow it, as they may follow
// any command, so that "help -json x" reports its error as JSON.
func (c *cli) help(args []string) error {
	// -h after help asks for what help prints anyway: "help ledger -h" is
	// "help ledger".
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
	fs := c.flagSet("help")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return usagef("help: %v", c.flagError(fs, err))
		}
		if len(fs.Args()) == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	args = pos
	switch {
	case len(args) == 0, len(args) == 1 && args[0] == "help":
		c.mainUsage(c.stdout)
		return errHelp
	case len(args) > 2:
		return usagef("help: want at most an area and a command, got %q", args)
	}
	if cmd, ok := c.topLevel[args[0]]; ok {
		if len(args) > 1 {
			return usagef("help: %s has no commands", args[0])
		}
		c.name, c.cmd = args[0], cmd
		return cmd.run(c, []string{"-h"})
	}
	cmds, ok := c.commands[args[0]]
	if !ok {
		return usagef("help: unknown command %q%s (want %s)", args[0], didYouMean(args[0], c.topNames()), strings.Join(c.topNames(), ", "))
	}
	if len(args) == 1 {
		c.areaUsage(c.stdout, args[0])
		return errHelp
	}
	cmd, ok := cmds[args[1]]
	if !ok {
		return usagef("help: %s: unknown command %q%s (want %s)", args[0], args[1], didYouMean(args[1], names(cmds)), strings.Join(names(cmds), ", "))
	}
	c.name, c.cmd = args[0]+" "+args[1], cmd
	return cmd.run(c, []string{"-h"})
}

// names returns the names of cmds, sorted.
func names(cmds map[string]command) []string {
	out := make([]string, 0, len(cmds))
	for n := range cmds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// topNames returns what may follow "looprunner": the areas, then the
// commands outside an area and help.
func (c *cli) topNames() []string {
	var out []string
	for _, a := range c.areas {
		out = append(out, a.name)
	}
	return append(append(out, names(c.topLevel)...), "help")
}

// mainUsage prints the usage of the binary to w.
func (c *cli) mainUsage(w io.Writer) {
	usage := "[-state-dir DIR] [-lock-timeout DURATION] [-json]"
	for _, e := range c.exts {
		if e.Usage != "" {
			usage += " " + e.Usage
		}
	}
	fmt.Fprintf(w, `looprunner is a thin command line over filetxn's typed stores: a deferred-work
ledger, a sprint-status board and the state of long-running loops.

usage: looprunner %s AREA COMMAND [flags] [args]
       looprunner batch < OPERATIONS | demo | version | help [AREA [COMMAND]]

`, usage)
	// One column for every group, so the groups are aligned alike.
	type row struct{ name, summary string }
	groups := [][]row{nil}
	width := 0
	add := func(name, summary string) {
		groups[len(groups)-1] = append(groups[len(groups)-1], row{name, summary})
		width = max(width, len(name))
	}
	for _, n := range names(c.topLevel) {
		add(n, c.topLevel[n].summary)
	}
	for _, a := range c.areas {
		groups = append(groups, nil)
		for _, n := range names(c.commands[a.name]) {
			add(a.name+" "+n, c.commands[a.name][n].summary)
		}
	}
	for i, g := range groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		for _, r := range g {
			fmt.Fprintf(w, "  %-*s  %s\n", width, r.name, r.summary)
		}
	}
	fmt.Fprint(w, `
Run 'looprunner AREA COMMAND -h' for a command's flags and arguments. The
global flags may also follow the command. Exit codes: 0 done, 1 refused by a
guard, 2 usage, 3 no such file, entry, row, loop or root, 4 halted, 5 paused,
6 a tick's harness failed, 65 a file it does not understand, 75 the lock was
busy past -lock-timeout, 124 a tick's harness timed out, 126 and 127 a tick's
harness could not be started or was not found.
`)
	for _, e := range c.exts {
		if e.Help != "" {
			fmt.Fprintf(w, "\n%s", e.Help)
		}
	}
}

// areaUsage prints the usage of an area to w.
func (c *cli) areaUsage(w io.Writer, name string) {
	i := slices.IndexFunc(c.areas, func(a area) bool { return a.name == name })
	fmt.Fprintf(w, "usage: looprunner %s COMMAND [flags] [args]\n\n%s\n\n", name, c.areas[i].summary)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range names(c.commands[name]) {
		cmd := c.commands[name][n]
		fmt.Fprintf(tw, "  %s\t%s\n", n, cmd.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'looprunner %s COMMAND -h' for a command's flags and arguments.\n", name)
}

// commandHelp prints the help of the command being run, whose flags are
// fs, to w: the usage line (required flags, then "[flags]", then the
// positional arguments), the summary, the command's own flags, the global
// flags and the details.
func (c *cli) commandHelp(w io.Writer, fs *flag.FlagSet, required []string) {
	line := "usage: looprunner " + c.name
	for _, name := range required {
		placeholder, _ := flag.UnquoteUsage(fs.Lookup(name))
		line += " -" + name + " " + placeholder
	}
	line += " [flags]"
	if c.cmd.args != "" {
		line += " " + c.cmd.args
	}
	fmt.Fprintf(w, "%s\n\n%s\n", line, c.cmd.summary)
	var own, global []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		switch {
		case strings.HasPrefix(f.Usage, "internal:"):
		case slices.Contains(globalFlags, f.Name), c.extFlag(f.Name):
			global = append(global, f)
		default:
			own = append(own, f)
		}
	})
	for _, group := range []struct {
		title string
		flags []*flag.Flag
	}{{"flags", own}, {"global flags (also before the command)", global}} {
		if len(group.flags) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", group.title)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range group.flags {
			placeholder, usage := flag.UnquoteUsage(f)
			if placeholder != "" {
				placeholder = " " + placeholder
			}
			if slices.Contains(required, f.Name) {
				usage += " (required)"
			} else if !slices.Contains([]string{"", "0", "0s", "false"}, f.DefValue) {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(tw, "  -%s%s\t%s\n", f.Name, placeholder, usage)
		}
		tw.Flush()
	}
	if c.cmd.details != "" {
		fmt.Fprintf(w, "\n%s", c.cmd.details)
	}
}

// flagError turns an error of the flag package into a usage error in the
// command's words: the flag, the value and what it wants, with a "did you
// mean" for a flag fs does not have. -h is not an error.
func (c *cli) flagError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		var visible []string
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.HasPrefix(f.Usage, "internal:") {
				visible = append(visible, "-"+f.Name)
			}
		})
		return usagef("unknown flag -%s%s", m[1], didYouMean("-"+m[1], visible))
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		value, name, why := m[1], m[2], m[3]
		if why == "parse error" || strings.HasPrefix(why, "strconv.") {
			why = "want " + kindOf(fs.Lookup(name))
		}
		return usagef("-%s %s: %s", name, value, why)
	}
	if m := needsArgument.FindStringSubmatch(msg); m != nil {
		placeholder, _ := flag.UnquoteUsage(fs.Lookup(m[1]))
		return usagef("-%s needs a value: -%s %s", m[1], m[1], placeholder)
	}
	return usagef("%s", msg)
}

// The messages of the flag package that flagError rewrites.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	invalidValue  = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-(\S+): (.*)$`)
	needsArgument = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// kindOf says what the flag f wants, for a value its own Set refused
// without saying why.
func kindOf(f *flag.Flag) string {
	if f == nil {
		return "another value"
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "true or false"
	}
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "an integer"
	case "*flag.float64Value":
		return "a number"
	}
	return "another value"
}

// didYouMean returns `; did you mean "x"?` (for a flag, `-x` unquoted) for the candidate closest to
// word, if one is close enough to be a typo of it (an edit distance of at
// most a third of its length, at least 1), or one starts with it; else "".
func didYouMean(word string, candidates []string) string {
	best, bestD := "", len(word)/3
	if bestD < 1 {
		bestD = 1
	}
	bestD++
	for _, cand := range candidates {
		d := distance(word, cand)
		if len(word) >= 2 && strings.HasPrefix(cand, word) && d > 1 {
			d = 1 // a prefix is as good as one typo
		}
		if d < bestD {
			best, bestD = cand, d
		}
	}
	if best == "" || best == word {
		return ""
	}
	if strings.HasPrefix(best, "-") {
		return fmt.Sprintf("; did you mean %s?", best)
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// distance is the edit distance between a and b (insertions, deletions,
// substitutions and transpositions of adjacent bytes, each costing 1).
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// durationValue is a time.Duration flag whose error for a value without a
// unit says that the unit is missing.
type durationValue struct{ p *time.Duration }

func (v durationValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
			return fmt.Errorf("a duration needs a unit: %ss, %sms or %sm", s, s, s)
		}
		return errors.New("want a duration such as 30s, 500ms or 2m")
	}
	*v.p = d
	return nil
}

// buildInfo is what version prints: the module and its version from the
// build information, and the commit when the build recorded one.
type buildInfo struct {
	Module     string `json:"module"`
	Version    string `json:"version"`
	Go         string `json:"go"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
}

// readBuildInfo returns the build information of this binary (see
// buildInfoOf).
func readBuildInfo() buildInfo { return buildInfoOf(debug.ReadBuildInfo()) }

// buildInfoOf returns what version prints for the build information bi (ok
// false: none). The version is the module's (v0.3.0 for a `go install
// ...@v0.3.0`, a pseudo-version for a build in a checkout that stamped its
// commit) or "(devel)" when the build did not know it.
func buildInfoOf(bi *debug.BuildInfo, ok bool) buildInfo {
	out := buildInfo{Module: "github.com/filetxn/filetxn", Version: "(devel)"}
	if !ok || bi == nil {
		return out
	}
	out.Go = bi.GoVersion
	if bi.Main.Path != "" {
		out.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		out.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Commit = s.Value
		case "vcs.time":
			out.CommitTime = s.Value
		case "vcs.modified":
			out.Modified = s.Value == "true"
		}
	}
	return out
}

// String is the line version prints: "looprunner MODULE VERSION (GO)", with
// the commit for a "(devel)" build that recorded one.
func (bi buildInfo) String() string {
	var extra []string
	if bi.Version == "(devel)" && bi.Commit != "" {
		commit := bi.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if bi.Modified {
			commit += ", modified"
		}
		extra = append(extra, "commit "+commit)
	}
	if bi.Go != "" {
		extra = append(extra, bi.Go)
	}
	s := "looprunner " + bi.Module + " " + bi.Version
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// version is "version": the module version this binary was built from.
func version(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	if err := c.parseNoArgs(fset, args); err != nil {
		return err
	}
	bi := readBuildInfo()
	if c.json {
		return c.printJSON(bi)
	}
	c.printf("%s\n", bi)
	return nil
}
