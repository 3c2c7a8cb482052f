package main

import (
	"slices"
	"testing"
)

// TestLinesSplitsAfterEachNewline: lines keeps each line's newline and a
// last line without one (a tick line in etcd that lacks it). Ablation: the
// index of a missing newline taken as -1 loops forever on "a\nb".
func TestLinesSplitsAfterEachNewline(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a\n", []string{"a\n"}},
		{"a\n\nb\n", []string{"a\n", "\n", "b\n"}},
		{"a\nb", []string{"a\n", "b"}},
	} {
		var got []string
		for _, l := range lines([]byte(tc.in)) {
			got = append(got, string(l))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("lines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
