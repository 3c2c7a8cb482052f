package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFullFileSystemLosesNothing runs a ledger add, a board advance and a
// loop tick on a real full file system: a 64 KiB tmpfs, filled. Each fails
// with one line that names its file and the system's reason, leaves its
// files byte for byte as they were, leaves no temporary file and no lock
// held; once space is freed, each succeeds. It needs to mount a tmpfs
// (root, as CI runs) and skips with the reason where it cannot.
//
// Ablation: with Tx.Write's deferred Cleanup of the PendingFile removed in
// the engine, the failed writes leave their temporary files and the test
// fails on them.
func TestFullFileSystemLosesNothing(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "full")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a 64 KiB tmpfs (root can; CI runs as root): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	w := &world{t: t, dir: mnt, state: filepath.Join(dir, "state"), loops: filepath.Join(mnt, "loops"), locks: map[string]string{}}
	ledger, board := filepath.Join(mnt, "deferred-work.md"), filepath.Join(mnt, "sprint-status-0.yaml")
	require.NoError(t, os.WriteFile(board, []byte("development_status:\n  epic-1: backlog\n  1-1-a: backlog\n  1-2-b: backlog\n"), 0o644))
	require.NoError(t, os.Mkdir(w.loops, 0o755))
	ctx := context.Background()
	ok := func(args ...string) {
		t.Helper()
		r := w.exec(ctx, args...)
		require.Zero(t, r.code, "%s", r)
	}
	add := func(origin string) []string {
		return []string{"ledger", "add", "-file", ledger, "-title", "T", "-origin", origin, "-source-spec", "s", "-reason", "r"}
	}
	ok(add("first")...)
	ok("board", "advance", "-file", board, "1-1-a", "ready-for-dev")
	ok("loop", "create", "-root", w.loops, "t")
	ok("loop", "tick", "-root", w.loops, "t", "--", "true")

	files := map[string][]byte{}
	loopDir := filepath.Join(w.loops, "loops", "t")
	for _, p := range []string{ledger, board, filepath.Join(loopDir, ".state.loop"), filepath.Join(loopDir, "ticks.jsonl")} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		files[p] = b
	}
	fill(t, filepath.Join(mnt, "filler"))

	for _, tc := range []struct {
		args []string
		file string // the file the error names
		lock string
	}{
		{add("on a full disk"), "deferred-work.md", ledger},
		{[]string{"board", "advance", "-file", board, "1-2-b", "in-progress"}, "sprint-status-0.yaml", board},
		{[]string{"loop", "tick", "-root", w.loops, "t", "--", "true"}, ".state.loop", ""},
	} {
		r := w.exec(ctx, tc.args...)
		name := tc.args[0] + " " + tc.args[1]
		require.NotZero(t, r.code, "%s on a full file system: exit 0, want a failure\n%s", name, r)
		require.NotEqual(t, 2, r.code, "%s on a full file system: a usage error\n%s", name, r)
		require.Regexp(t, `^`+name+`: [^\n]*`+strings.ReplaceAll(tc.file, ".", `\.`)+`[^\n]*no space left on device[^\n]*\n$`, r.stderr,
			"%s on a full file system: one line naming the file and ENOSPC\n%s", name, r)
		lockFile := filepath.Join(loopDir, ".state.lock")
		if tc.lock != "" {
			res := w.exec(ctx, "lock", "sidecar", tc.lock)
			require.Zero(t, res.code, "%s", res)
			lockFile = strings.TrimSpace(res.stdout)
		}
		res := w.exec(ctx, "-json", "lock", "holder", lockFile)
		var h struct{ Held bool }
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &h), "%s", res)
		require.False(t, h.Held, "%s left its lock %s held\n%s", name, lockFile, res)
	}
	for p, want := range files {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s after the failed writes", p)
	}
	require.Equal(t, []string{filepath.Join(mnt, "filler")}, w.strays(), "files left beside the data: want only the filler")

	require.NoError(t, os.Remove(filepath.Join(mnt, "filler")))
	ok(add("on a full disk")...)
	ok("board", "advance", "-file", board, "1-2-b", "in-progress")
	ok("loop", "tick", "-root", w.loops, "t", "--", "true")
	require.Empty(t, w.strays(), "files left beside the data after the writes that succeeded")
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling %s: %v, want ENOSPC", path, err)
			break
		}
	}
	for _, n := range []int{512, 64, 1} { // the last partial block too
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	require.NoError(t, f.Sync())
}
