package loopstate

import (
	"context"
	"fmt"
	"github.com/filetxn/filetxn"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the harness of the cross-process tests: a
// harness started with envHarness set runs runHarness instead of the tests.
// envTestDir is the directory the harness and the test share for marks.
const (
	envHarness = "LOOPSTATE_TEST_HARNESS"
	envTestDir = "LOOPSTATE_TEST_DIR"
)

// The variables harness.Command sets for its child (harness.EnvRoot,
// EnvLoop, EnvTick).
const (
	envRoot = "LOOPSTATE_ROOT"
	envLoop = "LOOPSTATE_LOOP"
	envTick = "LOOPSTATE_TICK"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envHarness); mode != "" {
		os.Exit(runHarness(mode, os.Getenv(envTestDir)))
	}
	// Under -race every process sleeps a second at exit (GORACE
	// atexit_sleep_ms defaults to 1000) before it reports; the children of
	// these tests still report races, without the sleep.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	os.Exit(m.Run())
}

// harnessBound bounds every wait of a harness, so that a harness left
// behind by a broken test exits on its own.
const harnessBound = 90 * time.Second

// testHarness returns a harness.Command's Run (see NewCommandHarness) that
// runs this test binary as the harness in the given mode, sharing dir with
// the test. Its standard error is
// discarded: inheriting the runner's would keep the runner's output pipe
// open after the runner is killed, and the test's wait for the runner would
// wait for the harness too.
func testHarness(t testing.TB, mode, dir string) Harness {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return NewCommandHarness(exe, []string{envHarness + "=" + mode, envTestDir + "=" + dir}, 200*time.Millisecond)
}

// runHarness is the harness process. Its modes:
//
//	block       mark "harness-running" (with its pid), wait for "harness-release-<tick>",
//	            print a cost line and exit 0
//	hang        start a "leaf" child in its group, record both pids, ignore SIGTERM,
//	            mark "harness-running" and wait to be killed
//	leaf        wait to be killed (SIGTERM ends it)
//	ops         run check-gate, then pause, on its own loop (it was handed the lock),
//	            record both exit codes in "harness-ops", exit 0
//	fail        print a line that is not a cost line and exit 3
func runHarness(mode, dir string) int {
	tick := os.Getenv(envTick)
	mark := func(name, content string) {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	switch mode {
	case "block":
		mark("harness-pid-"+tick, strconv.Itoa(os.Getpid()))
		mark("harness-running-"+tick, "")
		if !waitPath(filepath.Join(dir, "harness-release-"+tick), harnessBound) {
			return 1
		}
		fmt.Println("classified 3 failing checks")
		fmt.Println(`{"cost": {"usd": 0.09, "tokens": 21000}, "note": "3 failing checks classified"}`)
		return 0
	case "hang":
		signal.Ignore(syscall.SIGTERM)
		exe, _ := os.Executable()
		leaf := exec.Command(exe)
		leaf.Env = append(os.Environ(), envHarness+"=leaf")
		if err := leaf.Start(); err != nil {
			return 2
		}
		mark("harness-pids", fmt.Sprintf("%d %d", os.Getpid(), leaf.Process.Pid))
		mark("harness-running-"+tick, "")
		time.Sleep(harnessBound)
		return 1
	case "leaf":
		time.Sleep(harnessBound)
		return 1
	case "ops":
		l, err := mustRoot(NewRoot(os.Getenv(envRoot), filetxn.WithoutSync())).Open(context.Background(), os.Getenv(envLoop))
		if err != nil {
			mark("harness-ops", err.Error())
			return 1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errCheck := l.CheckGate(ctx)
		errPause := l.Pause(ctx, "harness", "asks for a review")
		mark("harness-ops", fmt.Sprintf("%d %d\n%v\n%v", exitCode(errCheck), exitCode(errPause), errCheck, errPause))
		return 0
	case "fail":
		fmt.Println("something broke")
		return 3
	}
	return 2
}

// waitPath polls for a file until it exists (true) or bound passes (false).
func waitPath(path string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}
