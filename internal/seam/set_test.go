package seam_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
)

// TestSetAddsHooksUntilRemovedOrTheTestEnds: At calls every hook set, in
// the order set, and returns the first error; a hook's remove takes it
// out at once, and the end of its test takes out what is left, so that At
// finds no hook after it. Ablation: Set replacing the hook before it (as
// internal/seam's did) loses the first hook's calls, and this test goes
// red.
func TestSetAddsHooksUntilRemovedOrTheTestEnds(t *testing.T) {
	errFirst, errSecond := errors.New("first"), errors.New("second")
	var calls []string
	t.Run("set", func(t *testing.T) {
		seam.Set(t, func(p seam.Point, path string) error {
			calls = append(calls, "1 "+string(p)+" "+path)
			return errFirst
		})
		remove := seam.Set(t, func(p seam.Point, path string) error {
			calls = append(calls, "2 "+string(p)+" "+path)
			return errSecond
		})
		require.Same(t, errFirst, seam.At(seam.Rename, "f"), "At(rename, f) = got, want the first hook's error")
		remove()
		remove() // a second remove does nothing
		require.Same(t, errFirst, seam.At(seam.Queued, "g"), "At(queued, g) after the second hook's remove = got, want the first's error")
	})
	require.NoError(t, seam.At(seam.Rename, "h"), "At(rename, h) after the test that set the hooks ended")
	require.Equal(t, []string{"1 rename f", "2 rename f", "1 queued g"}, calls, "calls = got, want")
	require.True(t, seam.Rename.Fails() && !seam.Queued.Fails(), "Fails(): want true for a file-system step, false for another point")
}

// BenchmarkAtUnset is the cost of a point in production: no hook is set.
func BenchmarkAtUnset(b *testing.B) {
	for b.Loop() {
		_ = seam.At(seam.Check, "f")
	}
}
