package runner

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bigBoard returns a board of epics epics with stories stories each.
func bigBoard(epics, stories int) string {
	var b strings.Builder
	b.WriteString("development_status:\n")
	for e := 1; e <= epics; e++ {
		fmt.Fprintf(&b, "  epic-%d: in-progress\n", e)
		for s := 1; s <= stories; s++ {
			fmt.Fprintf(&b, "  %d-%d-story-%d: review\n", e, s, s)
		}
		fmt.Fprintf(&b, "  epic-%d-retrospective: optional\n", e)
	}
	return b.String()
}

// BenchmarkBoardShow runs board show (text, and -json beside it) on boards
// of 100 stories per epic, with 10 to 1,000 epics: the time per story stays
// flat as the board grows. Ablation: listing each epic's stories by a walk
// over a fresh copy of every story (Doc.Stories per epic, the loop
// printBoard replaced) makes the text run quadratic: per story, the
// 1,000-epic board then costs tens of times what the 10-epic one does.
func BenchmarkBoardShow(b *testing.B) {
	for _, epics := range []int{10, 100, 1000} {
		dir := b.TempDir()
		f := filepath.Join(dir, "sprint-status.yaml")
		if err := os.WriteFile(f, []byte(bigBoard(epics, 100)), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, format := range []string{"text", "json"} {
			args := []string{"-state-dir", filepath.Join(dir, "state"), "board", "show", "-file", f}
			if format == "json" {
				args = append([]string{"-json"}, args...)
			}
			b.Run(fmt.Sprintf("epics=%d/stories=%d/%s", epics, epics*100, format), func(b *testing.B) {
				for b.Loop() {
					if code := run(args, nil, io.Discard, io.Discard); code != 0 {
						b.Fatalf("looprunner %q: exit %d", args, code)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(epics*100), "ns/story")
			})
		}
	}
}

// TestBoardShowListsEachEpicsStoriesUnderIt: the text of board show lists
// every epic followed by its own stories in file order, then the stories
// whose epic has no row, then the next story.
func TestBoardShowListsEachEpicsStoriesUnderIt(t *testing.T) {
	e := newEnv(t)
	f := e.write("sprint-status.yaml", `development_status:
  epic-1: done
  1-1-a: done
  epic-2: in-progress
  2-1-b: review
  1-2-c: done
  2-2-d: backlog
  3-1-e: ready-for-dev
  epic-1-retrospective: optional
`)
	r := e.want(0, "board", "show", "-file", f)
	want := `epic-1   done
  1-1-a  done
  1-2-c  done
epic-2   in-progress
  2-1-b  review
  2-2-d  backlog
3-1-e    ready-for-dev
next     2-2-d
`
	require.Equal(t, want, r.stdout, "board show = \n%s\nwant\n%s", r.stdout, want)
}
