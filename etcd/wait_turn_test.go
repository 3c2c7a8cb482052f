package etcd_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
)

// TestWaitersOnEveryMemberExclude: eight Backends (eight sessions, as on
// eight hosts) increment one document at once on a three-member cluster,
// their clients spread over every member, so that a waiter's watch and its
// reads of the queue may go to different members; every Mutate commits
// and no increment is lost. Ablation: a waitTurn that returns without
// waiting for the key ahead of its own turns it red. Its other rule, that
// only a deletion after its read of the queue counts (a watch made on a
// member that lags can replay the deletion of an earlier life of the key),
// went red in the etcd benchmark's contended rows on three members, not
// reliably here.
func TestWaitersOnEveryMemberExclude(t *testing.T) {
	ctx := testCtx(t)
	c := etcdtest.Start(t, 3)
	const backends, each = 8, 25
	var wg sync.WaitGroup
	for i := range backends {
		s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "wt")))
		require.NoError(t, err)
		wg.Go(func() {
			for k := range each {
				_, err := s.Mutate(ctx, func(d *count) error { d.N++; return nil })
				if !assert.NoError(t, err, "backend %d Mutate %d", i, k) {
					return
				}
			}
		})
	}
	wg.Wait()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "wt")))
	require.NoError(t, err)
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, backends*each, got.N, "increments")
}
