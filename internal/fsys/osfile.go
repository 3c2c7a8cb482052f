package fsys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/filetxn/filetxn/internal/seam"
)

// ErrNotRegular is returned, wrapped in an *fs.PathError that names the path
// and the kind of file found, when a file to be read is not a regular file.
// Package atomicfile exports it as atomicfile.ErrNotRegular, the one sentinel
// of the module for a file that is not a regular file.
var ErrNotRegular = errors.New("atomicfile: not a regular file")

// NotRegular returns the error, wrapping ErrNotRegular, for a file of mode m
// where a regular file was expected: "atomicfile: not a regular file: named
// pipe".
func NotRegular(m fs.FileMode) error {
	return fmt.Errorf("%w: %s", ErrNotRegular, kind(m))
}

// kind names the type of a file that is not regular.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "irregular file"
}

// OpenFile is os.OpenFile for regular files and directories, returning the
// same *fs.PathError values.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openFile(path, flag, perm)
}

// OpenRegular is OpenFile for a regular file only, opened without waiting:
// on Unix the open does not block on a named pipe (O_NONBLOCK, cleared again
// once the file is known to be regular) and never makes a terminal the
// controlling one (O_NOCTTY). A directory, a pipe, a socket or a device at
// path is refused, closed again at once, with an *fs.PathError (Op "open")
// naming path and wrapping ErrNotRegular; other failures are OpenFile's.
// With os.O_CREATE a missing file is created as OpenFile creates it. It
// returns the file's mode too, from the check it made, so that a caller that
// asks about it needs no second fstat.
func OpenRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileMode, error) {
	return openRegular(path, flag, perm)
}

// ReadFile is os.ReadFile for a regular file: it returns the whole file, with
// the same errors, and refuses anything else with an error wrapping
// ErrNotRegular. On Unix it reads with bare system calls (open, fstat, read,
// close), without an *os.File at all.
func ReadFile(path string) ([]byte, error) { return readFile(path, nil, 1) }

// ReadFileInto is ReadFile into buf's storage when the file fits in it with
// spare bytes of room left over, and into a new slice of the file's size plus
// spare otherwise. spare is at least 1: one byte more than the file lets the
// read see the end of the file without growing the buffer. The bytes returned
// have at least spare-1 bytes of capacity after them. An empty file gives a
// non-nil empty slice. It refuses what ReadFile refuses.
func ReadFileInto(path string, buf []byte, spare int) ([]byte, error) {
	return readFile(path, buf, max(spare, 1))
}

// sized returns buf[:0] if it holds size bytes with spare left over, else a
// new slice of that capacity; size is what fstat said, -1 when unknown.
func sized(buf []byte, size int64, spare int) []byte {
	n := 512
	if size > 0 && int64(int(size)) == size {
		n = int(size)
	}
	if cap(buf) >= n+spare {
		return buf[:0]
	}
	return make([]byte, 0, n+spare)
}

// withSpare returns data with at least spare-1 bytes of capacity after it,
// moving it when a file grew while it was read or its size was unknown.
// (spare counts the byte that let the read see the end of the file.)
func withSpare(data []byte, spare int) []byte {
	return slices.Grow(data, spare-1)
}

// readFileOS is ReadFileInto through an *os.File from OpenFile, for systems
// without named pipes that block an open (Windows opens a directory or a
// device at once; both are refused after the open).
func readFileOS(path string, buf []byte, spare int) ([]byte, error) {
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: NotRegular(fi.Mode())}
	}
	data := sized(buf, fi.Size(), spare)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return withSpare(data, spare), nil
			}
			return data, err
		}
	}
}

// ReadState is ReadFileInto for a state file that may be missing: it returns
// nil for a missing file, a non-nil empty slice for an empty one, and
// otherwise an *fs.PathError with Op op naming path (wrapping ErrNotRegular
// for a file that is not a regular one).
func ReadState(path, op string, buf []byte, spare int) ([]byte, error) {
	if err := seam.At(seam.Read, path); err != nil {
		return nil, &fs.PathError{Op: op, Path: path, Err: err}
	}
	data, err := ReadFileInto(path, buf, spare)
	switch {
	case err == nil:
		if data == nil {
			data = []byte{}
		}
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: op, Path: path, Err: err}
	}
}

// SyncDir fsyncs the directory dir, which makes a rename or a removal inside
// it durable (see syncDir for each system). It is the seam.SyncDir step of
// every publish, so that tests can fail it or act there.
func SyncDir(dir string) error {
	if err := seam.At(seam.SyncDir, dir); err != nil {
		return err
	}
	return syncDir(dir)
}

// MaxTempBase is how many bytes of a target's name go into the name of a
// temporary file or directory staged for it, so that ".<base>.tmp-<13
// random>" stays under the usual 255-byte limit on a name even for a target
// whose own name is near it.
const MaxTempBase = 200

// TempName returns a fresh name ".<base>.tmp-<random>" for a temporary file
// or directory standing in for a target named base: hidden, never equal to
// base, with base cut (at a rune boundary) past MaxTempBase bytes.
func TempName(base string) string {
	if len(base) > MaxTempBase {
		n := MaxTempBase
		for n > 0 && !utf8.RuneStart(base[n]) {
			n--
		}
		base = base[:n]
	}
	return "." + base + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
}

// UnwrapOS strips the path from one layer of *fs.PathError or *os.LinkError
// (its path is a temporary file's, or a resolved target's) and keeps the
// system-level step ("sync: input/output error"), so that the caller can
// wrap the error in one that names its own path and a Go-level Op.
// errors.Is still sees the errno underneath. Other errors are returned as
// they are.
func UnwrapOS(err error) error {
	switch e := err.(type) {
	case *fs.PathError:
		return StepError{e.Op, e.Err}
	case *os.LinkError:
		return StepError{e.Op, e.Err}
	}
	return err
}

// StepError is an OS error from one system-level step of an operation.
type StepError struct {
	Step string // "open", "sync", "rename", "mkdir", ...
	Err  error
}

func (e StepError) Error() string { return e.Step + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e StepError) Unwrap() error { return e.Err }
