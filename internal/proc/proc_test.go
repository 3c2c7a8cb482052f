package proc

import (
	"os"
	"runtime"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/stretchr/testify/require"
)

// tokens reports whether this system gives start tokens.
func tokens() bool {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
		return true
	}
	return false
}

func TestSelfIsNotGone(t *testing.T) {
	pid, self := os.Getpid(), Self()
	require.False(t, Gone(pid, self), "Gone(%d, %q) = true, want false", pid, self)
	require.False(t, Gone(pid, ""), "Gone(%d, \"\") = true, want false", pid)
	if tokens() {
		require.NotEmpty(t, self, "Self() = \"\", want a token on %s", runtime.GOOS)
		require.Equal(t, self, Start(pid), "Start(%d) = %q, want Self() %q", pid, Start(pid), self)
	}
}

// TestGoneSeesAnotherProcessBehindAPid: a live pid whose start token is not
// the recorded one is another process. (Ablation: Gone ignoring the token,
// as before start tokens, makes it false.)
func TestGoneSeesAnotherProcessBehindAPid(t *testing.T) {
	if !tokens() {
		t.Skipf("%s gives no start tokens: a live pid counts as the recorded process", runtime.GOOS)
	}
	pid := os.Getpid()
	require.True(t, Gone(pid, "linux:other-boot:1"), "Gone(%d, another token) = false, want true", pid)
}

func TestGoneIsFalseForNonPositivePids(t *testing.T) {
	for _, pid := range []int{0, -1} {
		require.False(t, Gone(pid, ""), "Gone(%d, \"\") = true, want false", pid)
		require.Empty(t, Start(pid), "Start(%d) = %q, want \"\"", pid, Start(pid))
	}
}

// TestGoneAfterTheProcessExits: a child's pid and token are not gone while
// it runs, and gone once it was killed and reaped. (Ablation: a Linux query
// that takes a missing pid for a live one, ignoring both ESRCH and a
// missing /proc/<pid>, makes it red.)
func TestGoneAfterTheProcessExits(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		c.Barrier() // never released: the parent kills it here
		return
	}
	g := testkit.Start(t, 1, t.TempDir())
	pid := g.Pid(0)
	tok := Start(pid)
	if tokens() {
		require.NotEmpty(t, tok, "Start(child %d) = \"\", want a token", pid)
	}
	require.False(t, Gone(pid, tok), "Gone(running child %d, %q) = true, want false", pid, tok)
	g.Kill(0)
	require.True(t, Gone(pid, tok), "Gone(killed child %d, %q) = false, want true", pid, tok)
}

func TestSameStartIgnoresAnUnknownBootID(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"linux:b1:100", "linux:b1:100", true},
		{"linux:b1:100", "linux:b2:100", false},
		{"linux:b1:100", "linux:b1:101", false},
		{"linux::100", "linux:b1:100", true},
		{"linux:b1:100", "linux::100", true},
		{"linux::100", "linux::101", false},
		{"darwin:1.2", "darwin:1.2", true},
		{"darwin:1.2", "darwin:1.3", false},
		{"linux::100", "darwin:100", false},
	} {
		require.Equal(t, tc.want, sameStart(tc.a, tc.b), "sameStart(%q, %q) = %v, want %v", tc.a, tc.b, !tc.want, tc.want)
	}
}
