package runner

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

func TestLockSidecar(t *testing.T) {
	e := newEnv(t)
	f := e.write("artifacts/deferred-work.md", "")
	want := e.sidecar(f)
	if r := e.want(0, "lock", "sidecar", f); r.stdout != want+"\n" {
		t.Fatalf("lock sidecar = %q, want %q", r.stdout, want)
	}
	var got struct {
		File     string `json:"file"`
		StateDir string `json:"state_dir"`
		Lock     string `json:"lock"`
	}
	decode(t, e.want(0, "-json", "lock", "sidecar", f), &got)
	if got.Lock != want || got.File != f || got.StateDir != e.state {
		t.Fatalf("lock sidecar -json = %+v, want lock %s", got, want)
	}
	// $FILETXN_STATE_DIR is the default state directory.
	r := runIn(t, e.dir, []string{envStateDir + "=" + e.state}, "lock", "sidecar", f)
	if r.code != 0 || r.stdout != want+"\n" {
		t.Fatalf("lock sidecar with $%s: %s", envStateDir, r)
	}
}

// TestTheDefaultStateDirIsBmadLoops: the README says that without
// -state-dir and $FILETXN_STATE_DIR the command line locks ledgers and boards
// under bmad-loop's state root, so that it excludes bmad-loop by default.
// With only $BMAD_LOOP_STATE_DIR set, lock sidecar names the lock there and
// ledger add and board advance create their locks there; $FILETXN_STATE_DIR
// then overrides it.
func TestTheDefaultStateDirIsBmadLoops(t *testing.T) {
	e := newEnv(t)
	bmad := e.path("bmad-state")
	ledgerFile := e.write("deferred-work.md", "")
	boardFile := e.write("sprint-status.yaml", testBoard)
	env := []string{envStateDir + "=", "BMAD_LOOP_STATE_DIR=" + bmad}
	for _, f := range []string{ledgerFile, boardFile} {
		want, err := lock.SidecarPath(bmad, f)
		require.NoError(t, err)
		r := runIn(t, e.dir, env, "lock", "sidecar", f)
		require.Equal(t, want+"\n", r.stdout, "lock sidecar %s with only $BMAD_LOOP_STATE_DIR = %q, want %q\n%s", f, r.stdout, want, r)
	}
	r := runIn(t, e.dir, env, "ledger", "add", "-file", ledgerFile, "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r")
	require.Equal(t, 0, r.code, "ledger add with only $BMAD_LOOP_STATE_DIR: %s", r)
	r = runIn(t, e.dir, env, "board", "advance", "-file", boardFile, "3-2-digest-delivery", "in-progress")
	require.Equal(t, 0, r.code, "board advance with only $BMAD_LOOP_STATE_DIR: %s", r)
	for _, f := range []string{ledgerFile, boardFile} {
		want, err := lock.SidecarPath(bmad, f)
		require.NoError(t, err)
		_, err = os.Stat(want)
		require.NoError(t, err, "the lock of %s under $BMAD_LOOP_STATE_DIR after a write", f)
	}
	r = runIn(t, e.dir, []string{envStateDir + "=" + e.state, "BMAD_LOOP_STATE_DIR=" + bmad}, "lock", "sidecar", ledgerFile)
	want, err := lock.SidecarPath(e.state, ledgerFile)
	require.NoError(t, err)
	require.Equal(t, want+"\n", r.stdout, "lock sidecar with $%s and $BMAD_LOOP_STATE_DIR = %q, want %q\n%s", envStateDir, r.stdout, want, r)
}

func TestLockHolder(t *testing.T) {
	e := newEnv(t)
	path := e.path("x.lock")
	h := hold(t, path)
	var got holderJSON
	decode(t, e.want(0, "-json", "lock", "holder", path), &got)
	if !got.Held || got.Holder == nil || got.PID != os.Getpid() || got.Purpose != "test holds it" || got.Acquired.IsZero() {
		t.Fatalf("lock holder -json (held) = %+v, want held by pid %d", got, os.Getpid())
	}
	if r := e.want(0, "lock", "holder", path); !strings.HasPrefix(r.stdout, fmt.Sprintf("held by pid %d (", os.Getpid())) {
		t.Fatalf("lock holder (held) = %q", r.stdout)
	}
	h.Release()
	got = holderJSON{}
	decode(t, e.want(0, "-json", "lock", "holder", path), &got)
	if got.Held || got.Holder != nil {
		t.Fatalf("lock holder -json (free) = %+v, want free, no record", got)
	}
	if r := e.want(0, "lock", "holder", path); r.stdout != "free\n" {
		t.Fatalf("lock holder (free) = %q", r.stdout)
	}
	oneErrorLine(t, e.want(3, "lock", "holder", e.path("missing.lock")), "lock holder")
}

// TestLockWaitNamesTheHolder holds, in the test process, the exact lock
// file each command will take, and runs the command with -lock-timeout 2s:
// after a second it says once on stderr that it waits and who holds the
// lock, and after two it gives up with exit 75, naming the holder again.
// Ablation: without the wait report in the stores' lock options the
// "waiting for lock" line is missing and the test fails; without the
// deadline the command hangs and runIn fails it. The wait it names is
// the lock's own, which starts after the command's set-up: between 1 s (the
// first line's) and the bound.
func TestLockWaitNamesTheHolder(t *testing.T) {
	e := newEnv(t)
	ledgerFile := e.write("artifacts/deferred-work.md", "### DW-1: x\nstatus: open\n")
	boardFile := e.write("artifacts/sprint-status.yaml", testBoard)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	e.want(0, "loop", "create", "-root", root, "nightly")
	tests := []struct {
		name    string
		lock    string
		command string
		args    []string
	}{
		{"ledger", e.sidecar(ledgerFile), "ledger close", []string{"ledger", "close", "-file", ledgerFile, "-date", "2026-06-11", "-note", "n", "DW-1"}},
		{"board", e.sidecar(boardFile), "board advance", []string{"board", "advance", "-file", boardFile, "3-3-export", "done"}},
		{"loop", loopLock(root, "ci"), "loop pause", []string{"loop", "pause", "-root", root, "ci"}},
		{"tick", loopLock(root, "nightly"), "loop tick", []string{"loop", "tick", "-root", root, "nightly", "--", bin, "help"}},
	}
	t.Run("busy", func(t *testing.T) {
		e := e.with(t)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := e.with(t)
				t.Parallel()
				hold(t, tt.lock)
				r := e.want(75, append([]string{"-lock-timeout", "2s"}, tt.args...)...)
				holder := fmt.Sprintf("held by pid %d (", os.Getpid())
				lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
				if len(lines) != 2 {
					t.Fatalf("stderr = %q, want a wait line and an error line\n%s", r.stderr, r)
				}
				wait := fmt.Sprintf("%s: waiting for lock %s, %s", tt.command, tt.lock, holder)
				if !strings.HasPrefix(lines[0], wait) || !strings.Contains(lines[0], ": test holds it) for ") {
					t.Errorf("first stderr line = %q, want it to start %q and name the purpose", lines[0], wait)
				}
				// The wait is the lock's own, from the first try: the
				// command's set-up before it came out of the 2 s, more
				// of them on a loaded machine (under Wine, "1.9s").
				_, after, _ := strings.Cut(lines[1], "gave up after ")
				waited, err := time.ParseDuration(after)
				if !strings.HasPrefix(lines[1], tt.command+": ") || !strings.Contains(lines[1], holder) || err != nil || waited < time.Second || waited > 2500*time.Millisecond {
					t.Errorf("second stderr line = %q, want the holder and the wait (1 s to 2.5 s) named", lines[1])
				}
			})
		}
	})
	// The tick that gave up ran nothing and recorded nothing.
	t.Run("no tick recorded", func(t *testing.T) {
		e := e.with(t)
		r := e.want(0, "-json", "loop", "show", "-root", root, "nightly")
		if d := state(t, r); d.TickCount != 0 || d.Status != loopstate.Running || !strings.Contains(r.stdout, `"current_tick": null`) {
			t.Fatalf("after a tick that found the lock busy: %+v\n%s", d, r)
		}
	})
}

// TestLockTimeoutZeroTriesOnce: with -lock-timeout 0 a busy lock fails at
// once, without a wait message, and a free one is taken (a tick on a free
// loop runs its harness to the end).
// Ablation (run): giving Loop.Tick the -lock-timeout context as its ctx
// (which bounds the harness too) instead of loopstate.WithLockTimeout
// records the free-lock tick as failed, "runner cancelled".
func TestLockTimeoutZeroTriesOnce(t *testing.T) {
	e := newEnv(t)
	free := e.path("free")
	e.want(0, "loop", "create", "-root", free, "ci")
	for range 3 {
		if rec := tick(t, e.want(0, "-json", "-lock-timeout", "0", "loop", "tick", "-root", free, "ci", "--", bin, "help")); rec.Outcome != "ok" {
			t.Fatalf("loop tick -lock-timeout 0 on a free loop = %+v, want ok", rec)
		}
	}
	f := e.write("deferred-work.md", "")
	hold(t, e.sidecar(f))
	r := e.want(75, "-lock-timeout", "0", "ledger", "add", "-file", f, "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r")
	oneErrorLine(t, r, "ledger add")
	if !strings.Contains(r.stderr, fmt.Sprintf("held by pid %d", os.Getpid())) {
		t.Fatalf("the busy message does not name the holder\n%s", r)
	}
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	hold(t, loopLock(root, "ci"))
	oneErrorLine(t, e.want(75, "-lock-timeout", "0", "loop", "approve", "-root", root, "ci"), "loop approve")
	oneErrorLine(t, e.want(75, "-lock-timeout", "0", "loop", "tick", "-root", root, "ci", "--", bin, "help"), "loop tick")
}
