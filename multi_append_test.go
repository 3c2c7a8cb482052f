package filetxn_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/multix"
	"github.com/filetxn/filetxn/internal/testkit/memback"
)

// TestALineLoggedWithNoChangedDocumentIsLogged: a commit whose fn logs a
// line (internal/multix, as loopstate logs a tick's) and changes no
// document still logs it, under its member's lock: appended to the log on
// files, created as its document on a backend. A line that is not whole
// is refused, and nothing is logged.
//
// Ablation seen red: run and remoteRun returning at once when no document
// changed (the line is lost, and MutateAll says nil).
func TestALineLoggedWithNoChangedDocumentIsLogged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	log := filepath.Join(dir, "log.jsonl")
	c := memback.New()
	for name, opts := range map[string][]filetxn.Option{"files": nil, "backend": {filetxn.WithBackend(c.Backend())}} {
		t.Run(name, func(t *testing.T) {
			s, err := filetxn.NewStore[*counter](filepath.Join(dir, name+".json"), filetxn.JSON[counter](), opts...)
			require.NoError(t, err)
			_, err = filetxn.MutateAll(ctx, []filetxn.Member{s}, func(m *filetxn.Multi) error {
				return multix.Append(m, s, log, "proj/lines/1", []byte("not a whole line"))
			})
			require.ErrorIs(t, err, filetxn.ErrInvalidArgument)
			commits, err := filetxn.MutateAll(ctx, []filetxn.Member{s}, func(m *filetxn.Multi) error {
				return multix.Append(m, s, log, "proj/lines/1", []byte("{\"n\":1}\n"))
			})
			require.NoError(t, err)
			require.False(t, commits[0].Written, "the document, unchanged, written")
			if name == "backend" {
				data, ok := c.Doc("proj/lines/1")
				require.True(t, ok, "the line's document")
				require.Equal(t, "{\"n\":1}\n", string(data))
				return
			}
			data, err := os.ReadFile(log)
			require.NoError(t, err)
			require.Equal(t, "{\"n\":1}\n", string(data))
		})
	}
}
