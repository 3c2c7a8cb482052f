package fsys

import (
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDirRaw(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix path syntax")
	}
	tests := []struct{ in, want string }{
		{"f", "."},
		{"/f", "/"},
		{"//f", "/"},
		{"a/b", "a"},
		{"a//b", "a"},
		{"/a/b/c", "/a/b"},
		{"a/../b", "a/.."}, // not cleaned to "."
		{"./f", "."},
		{"a/./../f", "a/./.."},
	}
	for _, tt := range tests {
		if got := dirRaw(tt.in); got != tt.want {
			t.Errorf("dirRaw(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJoinRaw(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix path syntax")
	}
	tests := []struct{ dir, name, want string }{
		{"a", "b", "a/b"},
		{"/", "b", "/b"},
		{"a/..", "../f", "a/../../f"},
		{".", "f", "./f"},
	}
	for _, tt := range tests {
		if got := joinRaw(tt.dir, tt.name); got != tt.want {
			t.Errorf("joinRaw(%q, %q) = %q, want %q", tt.dir, tt.name, got, tt.want)
		}
	}
}

// TestTempName checks the shape of temporary names and that a long target name
// still yields a name within the usual 255-byte limit, cut on a rune boundary.
func TestTempName(t *testing.T) {
	tests := []struct {
		name string
		base string
	}{
		{"short", "state.json"},
		{"255 bytes", strings.Repeat("x", 255)},
		{"multibyte at the cut", strings.Repeat("x", MaxTempBase-1) + strings.Repeat("é", 20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TempName(tt.base)
			if len(got) > 255 {
				t.Errorf("TempName(%d-byte base) = %d bytes, want <= 255", len(tt.base), len(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("TempName(%q) = %q, not valid UTF-8", tt.base, got)
			}
			i := strings.LastIndex(got, ".tmp-")
			if i < 0 || !strings.HasPrefix(got, ".") || !strings.HasPrefix(tt.base, got[1:i]) {
				t.Errorf("TempName(%q) = %q, want .<prefix of base>.tmp-<random>", tt.base, got)
			}
			if other := TempName(tt.base); other == got {
				t.Errorf("TempName(%q) twice = %q both times, want different names", tt.base, got)
			}
		})
	}
}
