package etcd_test

import (
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
)

// TestCreateListAndPrefixRemoval: Create makes a document only if there is
// none (fs.ErrExist otherwise, the first kept); List returns a prefix's
// documents in creation order, those of one Commit in the order of their
// names, and "a/" never lists "ab/"; a Put with Prefix removes more
// documents than etcd's default --max-txn-ops (128) in one Commit, and a
// hold that read one of them may commit again. Ablation: List sorted by
// key alone puts "a/b" before "a/z" (created first); a prefix removal sent
// as a plain delete removes nothing; a Commit that forgets that a prefix
// removed a document its hold read refuses the hold's next commit.
func TestCreateListAndPrefixRemoval(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	b := newBackend(t, c, "list")
	require.NoError(t, b.Create(ctx, "a/z", []byte("1")))
	require.ErrorIs(t, b.Create(ctx, "a/z", []byte("2")), fs.ErrExist, "Create of an existing document")
	got, err := b.Get(ctx, "a/z")
	require.NoError(t, err)
	assert.Equal(t, "1", string(got))
	h, err := b.Lock(ctx, "a", true)
	require.NoError(t, err)
	defer h.Release()
	_, err = h.Read(ctx, "a/line-0007")
	require.NoError(t, err)
	var puts []filetxn.Put
	for i := range 200 {
		puts = append(puts, filetxn.Put{Name: fmt.Sprintf("a/line-%04d", i), Data: []byte{}})
	}
	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, puts[:100], false))
	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, puts[100:], false))
	require.NoError(t, b.Create(ctx, "ab/x", nil))
	require.NoError(t, b.Create(ctx, "a/b", nil))
	ents, err := b.List(ctx, "a/")
	require.NoError(t, err)
	require.Len(t, ents, 202)
	assert.Equal(t, "a/z", ents[0].Name)
	assert.Equal(t, "1", string(ents[0].Data))
	for i := range 200 {
		assert.Equal(t, fmt.Sprintf("a/line-%04d", i), ents[1+i].Name)
	}
	assert.Equal(t, "a/b", ents[201].Name)
	assert.NotNil(t, ents[201].Data, "an empty document is not none")

	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: "a/line-", Remove: true, Prefix: true}}, false))
	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: "a/line-0007", Data: []byte("again")}}, false), "a commit after the hold's read was removed")
	ents, err = b.List(ctx, "a/")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"a/z", "a/b", "a/line-0007"}, names)
}

// TestPrefixWithoutRemoveRefused: a Commit with a Put{Prefix: true}
// without Remove is refused (filetxn.ErrInvalidArgument) before anything
// is sent: neither that Put nor the others of the Commit publish, the
// documents under the prefix are left as they were, and the hold may
// commit again. Ablation: without Commit's "Prefix without Remove" check
// the Put goes out as a plain put of "p/", and the Commit succeeds.
func TestPrefixWithoutRemoveRefused(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	b := newBackend(t, c, "prefix")
	require.NoError(t, b.Create(ctx, "p/a", []byte("1")))
	h, err := b.Lock(ctx, "p", true)
	require.NoError(t, err)
	defer h.Release()
	puts := []filetxn.Put{{Name: "other", Data: []byte("x")}, {Name: "p/", Data: []byte("x"), Prefix: true}}
	err = b.Commit(ctx, []filetxn.Held{h}, puts, false)
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Commit of a Put with Prefix but not Remove")
	assert.Contains(t, err.Error(), "p/: Prefix without Remove")
	ents, err := b.List(ctx, "")
	require.NoError(t, err)
	require.Len(t, ents, 1, "documents after the refused Commit: %v", ents)
	assert.Equal(t, "p/a", ents[0].Name)
	assert.Equal(t, "1", string(ents[0].Data))
	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, puts[:1], false), "the hold's commit after the refusal")
}
