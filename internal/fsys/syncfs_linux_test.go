package fsys

import "testing"

// TestKernelAtLeastReadsTheRelease: the kernel releases uname gives, with
// and without a patch level and a suffix, against 5.8, where syncfs began
// to report writeback errors. Ablation seen red: comparing the minor alone
// (6.1 is taken for older than 5.8).
func TestKernelAtLeastReadsTheRelease(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v1098", true},
		{"5.8.0", true},
		{"5.8", true},
		{"5.10.0-21-amd64", true},
		{"6.1", true},
		{"5.7.19", false},
		{"4.19.0-27-amd64", false},
		{"5.8rc1", true},
		{"", false},
		{"junk", false},
		{"5.x", false},
	} {
		if got := kernelAtLeast(tc.release, 5, 8); got != tc.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", tc.release, got, tc.want)
		}
	}
}
