package fsys

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// ErrNoStateRoot is returned when bmad-loop's state root cannot be derived
// from the environment; the error around it says which variable to set.
// Packages ledger and board return it without exporting it, for the
// module's own tests to match.
var ErrNoStateRoot = errors.New("no bmad-loop state root")

// StateRoot returns the state root bmad-loop derives (its runs.state_root),
// under whose locks/ directory it keeps the sidecar lock of every file it
// writes. The first answer wins:
//
//  1. $BMAD_LOOP_STATE_DIR, used as the root itself, when set and non-empty;
//     it must be absolute.
//  2. On Windows: %LOCALAPPDATA%\bmad-loop\state, else
//     %USERPROFILE%\AppData\Local\bmad-loop\state.
//  3. Elsewhere: $XDG_STATE_HOME/bmad-loop when that variable is absolute,
//     else $HOME/.local/state/bmad-loop.
//
// A base that is unset, empty, relative or the file system root is skipped.
// When no candidate is left, or $BMAD_LOOP_STATE_DIR is relative, the error
// wraps ErrNoStateRoot. StateRoot reads only the environment; it creates
// nothing.
func StateRoot() (string, error) {
	if dir := os.Getenv("BMAD_LOOP_STATE_DIR"); dir != "" {
		if !filepath.IsAbs(dir) {
			return "", fmt.Errorf("%w: BMAD_LOOP_STATE_DIR is relative (%q); set it to an absolute path", ErrNoStateRoot, dir)
		}
		return dir, nil
	}
	usable := func(base string) bool {
		return base != "" && filepath.IsAbs(base) && filepath.Dir(base) != base
	}
	if runtime.GOOS == "windows" {
		if base := os.Getenv("LOCALAPPDATA"); usable(base) {
			return filepath.Join(base, "bmad-loop", "state"), nil
		}
		if base := os.Getenv("USERPROFILE"); usable(base) {
			return filepath.Join(base, "AppData", "Local", "bmad-loop", "state"), nil
		}
		return "", fmt.Errorf("%w: set BMAD_LOOP_STATE_DIR or LOCALAPPDATA to an absolute path", ErrNoStateRoot)
	}
	if base := os.Getenv("XDG_STATE_HOME"); usable(base) {
		return filepath.Join(base, "bmad-loop"), nil
	}
	if home := os.Getenv("HOME"); usable(home) {
		return filepath.Join(home, ".local", "state", "bmad-loop"), nil
	}
	return "", fmt.Errorf("%w: set BMAD_LOOP_STATE_DIR, XDG_STATE_HOME or HOME to an absolute path", ErrNoStateRoot)
}
