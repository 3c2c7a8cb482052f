package lock

import (
	"strings"
	"sync"
	"unicode/utf16"

	"golang.org/x/sys/windows"

	"github.com/filetxn/filetxn/internal/fsys"
)

// The flags of GetFinalPathNameByHandle that Python's _getfinalpathname
// passes: the normalized name, on the volume's drive letter.
const (
	fileNameNormalized = 0x0
	volumeNameDOS      = 0x0
)

// recorded returns the name Windows records for path, the way Python's
// os.path.realpath names it (and so Path.resolve, since Python 3.10), so that
// every spelling of one file, in any case, with 8.3 short names or through a
// junction, gives the name bmad-loop hashes: path is opened and named by
// GetFinalPathNameByHandle (VOLUME_NAME_DOS, normalized), which gives each
// element in the case of its directory entry, long names for short ones and
// the drive letter as Windows names the volume (upper case); the \\?\ prefix
// of the answer is removed (\\?\UNC\ becomes \\), unless the plain form
// would not name the same file, which is when Python keeps it too: a name
// Win32 would change (a trailing dot or space, a device name such as NUL), or
// a path of MAX_PATH or more where long paths are not enabled. Python finds
// these with a second open of the plain form; here they are decided from the
// path alone (GetFullPathName, no I/O). It costs a
// CreateFile, a GetFinalPathNameByHandle and a CloseHandle; false when path
// cannot be opened or named. path is opened without asking for any access
// to its contents, sharing everything, as a file or a directory.
func recorded(path string) (string, bool) {
	p, err := windows.UTF16PtrFromString(fsys.LongPath(path))
	if err != nil {
		return "", false
	}
	h, err := windows.CreateFile(p, 0, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return "", false
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_PATH)
	for {
		n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), fileNameNormalized|volumeNameDOS)
		if err != nil || n == 0 {
			return "", false
		}
		if int(n) < len(buf) {
			return dosPath(windows.UTF16ToString(buf[:n])), true
		}
		buf = make([]uint16, n+1) // n counts the terminating NUL when buf is too small
	}
}

// dosPath removes the \\?\ (or \\?\UNC\) prefix of a final path name as
// Python's realpath does: only when the plain form names the same file.
func dosPath(final string) string {
	var plain string
	switch {
	case strings.HasPrefix(final, `\\?\UNC\`):
		plain = `\\` + final[len(`\\?\UNC\`):]
	case strings.HasPrefix(final, `\\?\`):
		plain = final[len(`\\?\`):]
	default:
		return final
	}
	if full, err := windows.FullPath(plain); err != nil || full != plain {
		return final // Win32 would parse the plain form into another name
	}
	if len(utf16.Encode([]rune(plain))) >= windows.MAX_PATH && !longPathsEnabled() {
		return final // the plain form cannot be opened here
	}
	return plain
}

// longPathsEnabled reports whether this process can open a path of MAX_PATH
// or more without the \\?\ prefix (RtlAreLongPathsEnabled: Windows 10 1607
// and later, with long paths enabled on the system; the Go runtime, like
// python.exe's manifest, opts in then). It asks once.
var longPathsEnabled = sync.OnceValue(func() bool {
	proc := windows.NewLazySystemDLL("ntdll.dll").NewProc("RtlAreLongPathsEnabled")
	if proc.Find() != nil {
		return false
	}
	r, _, _ := proc.Call()
	return byte(r) != 0
})
