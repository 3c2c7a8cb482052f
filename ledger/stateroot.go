package ledger

import "github.com/filetxn/filetxn/internal/fsys"

// BmadLoopStateRoot returns the state root bmad-loop derives (its
// runs.state_root), under whose locks/ directory it keeps the sidecar lock of
// every ledger it writes, and where [Open] places the ledger's lock by
// default. The first answer wins:
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
// says which variable to set to an absolute path. BmadLoopStateRoot reads
// only the environment; it creates nothing.
func BmadLoopStateRoot() (string, error) { return fsys.StateRoot() }
