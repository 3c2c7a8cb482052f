package filetxn

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
)

// roomDoc is a log that appends in place to the bytes it was decoded from,
// in the room after them, as the Codec contract allows.
type roomDoc struct{ b []byte }

// encKeeper is roomDoc's codec. It keeps every slice its Encode returned,
// with a copy, as the contract allows ("What Encode returns is written,
// then kept"), so that a test can check that none of them changed.
type encKeeper struct {
	out, copies *[][]byte
}

func (encKeeper) Decode(data []byte) (*roomDoc, error) { return &roomDoc{b: data}, nil }

func (c encKeeper) Encode(d *roomDoc) ([]byte, error) {
	*c.out = append(*c.out, d.b)
	*c.copies = append(*c.copies, bytes.Clone(d.b))
	return d.b, nil
}

// TestMutateGivesTheRoomOfAnUnpublishedEncodingToNoOtherDecode: a batch
// that appended in the room after the bytes it read, and encoded that, but
// whose write failed, publishes nothing; the next batch reads the same
// bytes, and must not get that room again, since the failed batch's
// encoding (which its codec may keep) lies in it. Ablation: finish keeping
// s.last after an unpublished change makes the next batch's append
// overwrite the failed batch's encoding, and this test goes red.
func TestMutateGivesTheRoomOfAnUnpublishedEncodingToNoOtherDecode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("0\n"), 0o644))
	var out, copies [][]byte
	s := must(NewStore[*roomDoc](path, encKeeper{&out, &copies}))
	ctx := context.Background()
	add := func(line string) func(*roomDoc) error {
		return func(d *roomDoc) error { d.b = append(d.b, line...); return nil }
	}
	_, err := s.Mutate(ctx, add("1\n")) // publishes, with room after it
	require.NoError(t, err)

	failRename := errors.New("injected rename failure")
	remove := seam.Set(t, func(p seam.Point, _ string) error {
		if p == seam.Rename {
			return failRename
		}
		return nil
	})
	_, err = s.Mutate(ctx, add("AAAA\n"))
	require.ErrorIs(t, err, failRename, "Mutate with a failing rename = %v, want the rename's error", err)
	remove()

	_, err = s.Mutate(ctx, add("BBBB\n"))
	require.NoError(t, err)
	for i := range out {
		require.Equal(t, string(copies[i]), string(out[i]), "Encode result %d = got now, want as it was returned", i)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "0\n1\nBBBB\n", string(got), "file = got, want the published lines")
}
