package testkit

import "testing"

// NoSymlinks is the limitation of Wine 8 that symbolic-link tests meet:
// CreateSymbolicLinkW reports success and creates nothing, so os.Symlink
// returns nil and the link is not there.
const NoSymlinks = "Wine 8's CreateSymbolicLinkW reports success and creates nothing"

// NoPOSIXRename is the limitation of Wine 8 that a replace of a file held
// open meets: it has no FileRenameInformationEx (NtSetInformationFile answers
// STATUS_NOT_IMPLEMENTED, SetFileInformationByHandle ERROR_INVALID_PARAMETER),
// so there is no POSIX-semantics rename, and its classic rename refuses to
// replace a file that any handle holds open, whatever that handle shares
// (ERROR_ACCESS_DENIED), as Windows' own classic rename does.
const NoPOSIXRename = "Wine 8 has no FileRenameInformationEx (POSIX-semantics rename) and refuses to replace a file any handle holds open"

// NoMaxPath is the limitation of Wine 8 that long-path tests meet: its
// Win32 calls accept a path longer than MAX_PATH (260 UTF-16 units) without
// the \\?\ prefix, so a call that Windows refuses for its length succeeds.
const NoMaxPath = `Wine 8 applies no MAX_PATH limit to a path without the \\?\ prefix`

// Detected reports whether this process runs under Wine: on Windows, whether
// ntdll.dll exports wine_get_version, which Wine's has and Windows' never
// has. It is false on every other system. It looks once, at the first call,
// and is safe for concurrent use.
func Detected() bool { return detected() }

// Skip skips the test when it runs under Wine, saying that limitation (a
// sentence naming what Wine lacks, such as NoSymlinks) is why. Anywhere else
// it does nothing. Call it before the step that needs what Wine lacks.
func Skip(t testing.TB, limitation string) {
	t.Helper()
	if Detected() {
		t.Skip("under Wine: " + limitation)
	}
}
