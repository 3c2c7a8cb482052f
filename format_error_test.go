package filetxn_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
)

func TestFormatErrorSaysWhereAndWhat(t *testing.T) {
	why := errors.New("want a whole number")
	for _, tt := range []struct {
		err  *filetxn.FormatError
		want string
	}{
		{&filetxn.FormatError{Line: 3, Column: 5, Err: why}, "line 3, column 5: want a whole number"},
		{&filetxn.FormatError{Line: 12, Key: "DW-5", Err: why}, "line 12: DW-5: want a whole number"},
		{&filetxn.FormatError{Key: "gates.max_ticks", Err: why}, "gates.max_ticks: want a whole number"},
		{&filetxn.FormatError{Err: why}, "want a whole number"},
		{&filetxn.FormatError{Line: 1}, "line 1: malformed"},
	} {
		require.Equal(t, tt.want, tt.err.Error(), "%#v.Error() = %q, want %q", tt.err, tt.err.Error(), tt.want)
		require.Equal(t, tt.err.Err, tt.err.Unwrap(), "%#v.Unwrap() = %v, want Err", tt.err, tt.err.Unwrap())
	}
}

// A codec's FormatError reaches the caller inside an *fs.PathError that
// names the file, and the file is left as it was.
func TestFormatErrorOfACodecNamesTheFile(t *testing.T) {
	path := t.TempDir() + "/state.json"
	require.NoError(t, os.WriteFile(path, []byte("{\"n\": 1,}\n"), 0o644))
	s, err := filetxn.NewStore(path, filetxn.JSON[struct{ N int }]())
	require.NoError(t, err)
	_, err = s.Mutate(t.Context(), func(*struct{ N int }) error { return nil })
	var pe *fs.PathError
	var fe *filetxn.FormatError
	require.ErrorAs(t, err, &pe, "Mutate on a malformed file = %v, want an *fs.PathError", err)
	require.Equal(t, path, pe.Path, "PathError.Path = %q, want %q", pe.Path, path)
	require.ErrorAs(t, err, &fe, "Mutate on a malformed file = %v, want a *filetxn.FormatError", err)
	require.Equal(t, 1, fe.Line, "FormatError.Line = %d, want 1", fe.Line)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "{\"n\": 1,}\n", string(data), "the refused file = %q, want it unchanged", data)
}
