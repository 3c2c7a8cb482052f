package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/loopstate"
)

// TestTheChildInheritsTheLockAndNoFileOfTheRunner: Command's godoc says the
// child is started with the loop's lock handed over and inherits no other
// descriptor the runner opened. While the test process holds two files of
// its own open, a harness that lists its descriptors (ls of /proc/self/fd)
// has the loop's lock file open and nothing else under the test's directory.
// (Descriptors the test process itself inherited without close-on-exec
// pass on to any child, as with every exec, and are not checked.)
func TestTheChildInheritsTheLockAndNoFileOfTheRunner(t *testing.T) {
	ctx := context.Background()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	l, err := mustRoot(loopstate.NewRoot(dir)).Create(ctx, "x", nil)
	require.NoError(t, err, "Create(x) = %v", err)
	for _, name := range []string{"a", "b"} { // descriptors the runner holds meanwhile
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		defer f.Close()
	}
	var out strings.Builder
	rec, err := l.Tick(ctx, loopstate.TriggerManual, (&Command{Path: "ls", Args: []string{"-l", "/proc/self/fd"}, Stdout: &out}).Run)
	require.NoError(t, err, "Tick = %v", err)
	require.Equal(t, loopstate.OK, rec.Outcome, "Tick(ls -l /proc/self/fd).Outcome = %s, want ok; stdout %q", rec.Outcome, out.String())
	var under []string // the child's descriptors on files under dir
	for _, line := range strings.Split(out.String(), "\n") {
		if _, target, ok := strings.Cut(line, " -> "); ok && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			under = append(under, target)
		}
	}
	want := []string{filepath.Join(dir, "loops", "x", ".state.lock")}
	require.Equal(t, want, under, "the harness's descriptors on the test's files = %v, want only the loop's lock\n%s", under, out.String())
}
