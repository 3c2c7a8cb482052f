package filetxntest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
)

// fakeTB records the failures reported to it instead of failing the test, so
// that a test can check that a harness call fails a broken subject. Name,
// TempDir, Cleanup and the rest go to the real test. Fatalf and FailNow stop
// the call under test with a panic that failures recovers.
type fakeTB struct {
	testing.TB
	mu   sync.Mutex // protects errs
	errs []string
}

// fatal is the panic of fakeTB's FailNow.
type fatal struct{}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Logf(string, ...any)       {}
func (f *fakeTB) Log(...any)                {}
func (f *fakeTB) Fail()                     { f.record("Fail") }
func (f *fakeTB) FailNow()                  { f.record("FailNow"); panic(fatal{}) }
func (f *fakeTB) Error(args ...any)         { f.record(fmt.Sprint(args...)) }
func (f *fakeTB) Errorf(s string, a ...any) { f.record(fmt.Sprintf(s, a...)) }
func (f *fakeTB) Fatal(args ...any)         { f.record(fmt.Sprint(args...)); panic(fatal{}) }
func (f *fakeTB) Fatalf(s string, a ...any) { f.record(fmt.Sprintf(s, a...)); panic(fatal{}) }
func (f *fakeTB) Failed() bool              { f.mu.Lock(); defer f.mu.Unlock(); return len(f.errs) > 0 }

func (f *fakeTB) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, msg)
}

// failures runs fn with a fakeTB standing in for t and returns what fn
// reported, joined by newlines ("" if nothing). In a child process of the
// harness fn gets t itself, so that what goes wrong there fails the child.
func failures(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	if testkit.Child(t) != nil {
		fn(t)
		return ""
	}
	f := &fakeTB{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(fatal); !ok {
					panic(v)
				}
			}
		}()
		fn(f)
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.errs, "\n")
}
