package board

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// New returns a new board for project, laid out as BMAD's sprint planning writes
// sprint-status.yaml: a header comment, the STATUS DEFINITIONS comment, the generated,
// last_updated, project, project_key, tracking_system and story_location fields, and
// development_status with, for each epic in order of number, its row (backlog), its
// stories in the order given and its retrospective (optional), a blank line between
// epics. Each Row given is a story: its key is <Epic>-<Number><Split>-<Slug>, and its
// Status is Backlog when empty; its Key and Line are ignored. now is written, as
// YYYY-MM-DD, in generated and last_updated.
//
// The Doc reads as if Parse had read its bytes: Doc.Bytes returns the board, and
// Doc.Advance moves its rows. It does no I/O. To create the file, write Doc.Bytes with
// atomicfile.WriteFile, or, inside Store.Mutate, replace the Doc of a missing board
// (its Bytes are nil; an existing one New would overwrite) with it: *d = *nd.
//
// New fails with an error matching filetxn.ErrInvalidArgument, naming the value, for an
// empty project or one that cannot be written as a plain YAML value, a story whose epic
// or number is below 1, whose split is not one letter a-z or whose slug cannot be written
// plainly, a status outside the order, or two stories with one key.
func New(project string, now time.Time, stories ...Row) (*Doc, error) {
	bad := func(format string, args ...any) (*Doc, error) { return nil, invalid("New", format, args...) }
	if !plainScalar(project) {
		return bad("project %q: cannot be written as a plain YAML value", project)
	}
	byEpic := map[int][]string{}
	seen := map[string]bool{}
	for _, st := range stories {
		key := strconv.Itoa(st.Epic) + "-" + strconv.Itoa(st.Number) + st.Split + "-" + st.Slug
		status := cmp.Or(st.Status, Backlog)
		switch {
		case st.Epic < 1 || st.Number < 1:
			return bad("story %q: epic and number must be 1 or more", key)
		case st.Split != "" && (len(st.Split) != 1 || st.Split[0] < 'a' || st.Split[0] > 'z'):
			return bad("story %q: split %q is not one letter a-z", key, st.Split)
		case st.Slug == "" || !plainString(key):
			return bad("story %q: the key cannot be written as a plain YAML key", key)
		case Rank(status) < 0:
			return bad("story %q: status %q is outside the order", key, status)
		case seen[key]:
			return bad("story %q is given twice", key)
		}
		seen[key] = true
		byEpic[st.Epic] = append(byEpic[st.Epic], "  "+key+": "+string(status)+"\n")
	}
	date := now.Format(time.DateOnly)
	fields := "generated: " + date + "\nlast_updated: " + date + "\nproject: " + project +
		"\nproject_key: NOKEY\ntracking_system: file-system\nstory_location: \"{project-root}/_bmad-output/implementation-artifacts\"\n"
	var b strings.Builder
	for line := range strings.Lines(fields) {
		b.WriteString("# " + line)
	}
	b.WriteString("\n" + statusDefinitions + "\n" + fields + "\ndevelopment_status:\n")
	for i, e := range slices.Sorted(maps.Keys(byEpic)) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("  " + epicKey(e) + ": " + string(Backlog) + "\n")
		for _, row := range byEpic[e] {
			b.WriteString(row)
		}
		b.WriteString("  " + epicKey(e) + "-retrospective: optional\n")
	}
	return Parse([]byte(b.String()))
}

// statusDefinitions is the comment BMAD's sprint planning writes after the header.
const statusDefinitions = `# STATUS DEFINITIONS:
# ==================
# Epic Status:
#   - backlog: Epic not yet started
#   - in-progress: Epic actively being worked on
#   - done: All stories in epic completed
#
# Epic Status Transitions:
#   - backlog -> in-progress: Automatically when first story is created (via create-story)
#   - in-progress -> done: Manually when all stories reach 'done' status
#
# Story Status:
#   - backlog: Story only exists in epic file
#   - ready-for-dev: Story file created in stories folder
#   - in-progress: Developer actively working on implementation
#   - review: Ready for code review (via Dev's code-review workflow)
#   - done: Story completed
#
# Retrospective Status:
#   - optional: Can be completed but not required
#   - done: Retrospective has been completed
#
# WORKFLOW NOTES:
# ===============
# - Epic transitions to 'in-progress' automatically when first story is created
# - Stories can be worked in parallel if team capacity allows
# - Developer typically creates next story after previous one is 'done' to incorporate learnings
# - Dev moves story to 'review', then runs code-review (fresh context, different LLM recommended)
`
