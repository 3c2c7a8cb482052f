package testkit

import (
	"os"
	"runtime"
	"testing"
)

// TestDetectedMatchesTheRunner: Detected is true exactly where the CI's Wine
// stage runs the tests (.ci/wine sets WINEPREFIX, which Wine passes on to the
// Windows processes it runs), and false on every system but Windows. A
// Detected that always said false (or looked up a name ntdll does not
// export) fails it under .ci/wine; one that always said true fails it
// everywhere else. (Run by hand under Wine, set WINEPREFIX as .ci/wine does.)
func TestDetectedMatchesTheRunner(t *testing.T) {
	want := runtime.GOOS == "windows" && os.Getenv("WINEPREFIX") != ""
	if got := Detected(); got != want {
		t.Fatalf("Detected() = %v, want %v (GOOS %s, WINEPREFIX %q)", got, want, runtime.GOOS, os.Getenv("WINEPREFIX"))
	}
	if got := Detected(); got != want {
		t.Fatalf("Detected() a second time = %v, want %v", got, want)
	}
}

// TestSkipSkipsOnlyUnderWine: Skip ends the test under Wine and nowhere else.
func TestSkipSkipsOnlyUnderWine(t *testing.T) {
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Skip(t, NoSymlinks)
	})
	if skipped != Detected() {
		t.Fatalf("Skip(t, NoSymlinks) skipped = %v, want %v (Detected)", skipped, Detected())
	}
}
