package lock

import "testing"

// SetHookBeforeLock, SetHookBeforeInherited and SetHookReleaseIO install the
// test hooks of table.go for the external tests until t ends. Call them
// before starting the goroutines that may run the hook.
func SetHookBeforeLock(t testing.TB, f func(path string)) {
	hookBeforeLock = f
	t.Cleanup(func() { hookBeforeLock = nil })
}

func SetHookBeforeInherited(t testing.TB, f func(path string)) {
	hookBeforeInherited = f
	t.Cleanup(func() { hookBeforeInherited = nil })
}

func SetHookReleaseIO(t testing.TB, f func(path string)) {
	hookReleaseIO = f
	t.Cleanup(func() { hookReleaseIO = nil })
}

// HandoverEnv is the variable through which HandOver names the inherited
// descriptors, for the tests that forge it.
const HandoverEnv = handoverEnv

// SetHookAcquireAll installs AcquireAll's test hook (see all.go) until t
// ends.
func SetHookAcquireAll(t testing.TB, f func(k int, path string)) {
	hookAcquireAll = f
	t.Cleanup(func() { hookAcquireAll = nil })
}
