package filetxn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// TestMutateProbedFnOnALeadersProbeFailsReentrant: a MutateProbed whose
// lock file does not exist yet probes before it takes the lock, while it
// leads its Store's group; a Mutate of the same Store from its fn there
// would queue behind its own caller's lead, which waits for fn. It gets
// lock.ErrReentrant at once, as a Mutate from fn under the lock does, not
// a wait that only its ctx ends. Ablation: mayQueue not refusing the
// leading goroutine makes the inner Mutate wait until its ctx ends, and
// this test goes red.
func TestMutateProbedFnOnALeadersProbeFailsReentrant(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kv.json")
	require.NoError(t, os.WriteFile(path, []byte("{}\n"), 0o644))
	s := must(NewStore[*kv](path, kvCodec{}, WithLockPath(filepath.Join(dir, "missing.lock"))))
	var inner error
	_, err := s.MutateProbed(context.Background(), func(d *kv) error {
		if inner != nil {
			return nil // under the lock, after the probe
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, inner = s.Mutate(ctx, func(*kv) error { return nil })
		if inner == nil {
			inner = errors.New("inner Mutate succeeded")
		}
		d.m["k"] = "1"
		return nil
	})
	require.NoError(t, err)
	require.ErrorIs(t, inner, lock.ErrReentrant, "Mutate from a probe of the leading MutateProbed = %v, want lock.ErrReentrant", inner)
}
