package lock_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/filetxn/filetxn/lock"
)

// FuzzReadHolder: whatever bytes a lock file holds (a record torn by a
// crash, another program's bytes, garbage), ReadHolder never panics and
// answers a holder, no holder, or an *fs.PathError naming the file.
func FuzzReadHolder(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("\x00\n"))
	f.Add([]byte("\x00{\"pid\":4242,\"host\":\"h\",\"program\":\"looprunner\",\"purpose\":\"tick t\",\"acquired\":\"2026-06-01T09:00:00.123456789Z\"}\n"))
	f.Add([]byte("\x00{\"pid\":4242,\"acquired\":\"2026-06-01T09:00:00Z\",\"handover\":\"abc\"}\ntrailing bytes of an older, longer record"))
	f.Add([]byte("\x00{\"pid\":42"))                              // torn
	f.Add([]byte("\x00{\"pid\":\"x\"}\n"))                        // wrong type
	f.Add([]byte("\x00{\"pid\":1,\"acquired\":\"yesterday\"}\n")) // bad time
	f.Add([]byte("\x00\xff\xfe\n"))
	f.Add([]byte("\x00" + strings.Repeat("x", 5000)))
	f.Add([]byte("\x00 \t \n{\"pid\":1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x.lock")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := lock.ReadHolder(path)
		var pe *fs.PathError
		switch {
		case err != nil && (!errors.As(err, &pe) || pe.Path != path):
			t.Fatalf("ReadHolder(%q) = %v, want an *fs.PathError naming the file", data, err)
		case err != nil && h != nil:
			t.Fatalf("ReadHolder(%q) = %v, %v: a holder with an error", data, h, err)
		case h != nil:
			_ = h.String() // describing any record read must not panic
		}
		after, rerr := os.ReadFile(path)
		if rerr != nil || string(after) != string(data) {
			t.Fatalf("ReadHolder(%q) changed the file to %q (%v)", data, after, rerr)
		}
	})
}

// FuzzHolderPurpose: the purpose a holder gives is what a waiter reads
// back from the holder record, for any valid UTF-8 text (quotes, newlines,
// control characters, HTML), and the lock stays usable. A purpose whose
// JSON encoding is too long for the record is read back cut, with "…"
// after it, and not much shorter than the record allows. Ablation (run):
// appending the whole purpose whatever its length makes the seeds of many
// "<" and control characters red (a purpose of 2,900 bytes escaped to six
// times that, and ReadHolder answered "holder record too long"); so does a
// cut that keeps only the first character.
func FuzzHolderPurpose(f *testing.F) {
	for _, s := range []string{"", "tick ci-triage", "a \"quoted\" \\ purpose", "line\nbreak\r\n", "<b>&amp;</b>", "\x00\x1f\u2028", strings.Repeat("é", 300),
		strings.Repeat("<", 2000), "\u2002" + strings.Repeat("\x0f", 2900) + "\u2006", strings.Repeat("é", 5000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, purpose string) {
		if !utf8.ValidString(purpose) {
			return // JSON carries valid UTF-8 only
		}
		path := filepath.Join(t.TempDir(), "x.lock")
		h, err := lock.TryAcquire(path, lock.WithPurpose(purpose))
		if err != nil {
			t.Fatalf("TryAcquire(WithPurpose(%q)) = %v", purpose, err)
		}
		got, err := lock.ReadHolder(path)
		h.Release()
		if err != nil || got == nil || got.PID != os.Getpid() {
			t.Fatalf("ReadHolder after WithPurpose(%q) = %#v, %v; want that purpose and pid %d", purpose, got, err, os.Getpid())
		}
		if got.Purpose != purpose {
			q, _ := json.Marshal(purpose)
			kept, cut := strings.CutSuffix(got.Purpose, "…")
			g, _ := json.Marshal(got.Purpose)
			if !cut || !strings.HasPrefix(purpose, kept) || kept == purpose || len(q) <= 3000 || len(g) < 3000 {
				t.Fatalf("ReadHolder after WithPurpose(%q) = purpose %q; want that purpose, or cut with \"…\" after it when its encoding (%d bytes) is too long for the record", purpose, got.Purpose, len(q))
			}
		}
		if got, err := lock.ReadHolder(path); err != nil || got != nil {
			t.Fatalf("ReadHolder after Release = %+v, %v; want no holder", got, err)
		}
	})
}

var sidecarName = regexp.MustCompile(`(?s)^[0-9a-f]{16}-.*\.lock$`)

// FuzzSidecarPath: for any file name, SidecarPath gives a file directly in
// <root>/locks, named <16 hex>-<the name, cut at a rune boundary to fit 255
// bytes>.lock, and the same path for the plain, "./" and "d/../" spellings
// of the file.
func FuzzSidecarPath(f *testing.F) {
	for _, s := range []string{"deferred-work.md", "sprint-status.yaml", ".hidden", "a b", "é", strings.Repeat("x", 300), strings.Repeat("é", 200), "x.lock"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || len(name) > 255 {
			return // not one file name
		}
		if runtime.GOOS == "windows" && !utf8.ValidString(name) {
			return // Windows names are UTF-16: such bytes come back as U+FFFD
		}
		dir, root := t.TempDir(), t.TempDir()
		target := filepath.Join(dir, name)
		got, err := lock.SidecarPath(root, target)
		if err != nil {
			t.Fatalf("SidecarPath(%q, %q) = %v", root, target, err)
		}
		base := filepath.Base(got)
		if filepath.Dir(got) != filepath.Join(root, "locks") || !sidecarName.MatchString(base) || len(base) > 255 {
			t.Fatalf("SidecarPath(%q, %q) = %q, want <root>/locks/<16 hex>-<name>.lock of at most 255 bytes", root, target, got)
		}
		short := strings.TrimSuffix(base[17:], ".lock")
		if !strings.HasPrefix(name, short) || !utf8.ValidString(short) && utf8.ValidString(name) {
			t.Fatalf("SidecarPath(%q, %q) = %q: %q is not a whole-rune prefix of the name", root, target, got, short)
		}
		for _, spelling := range []string{
			dir + string(filepath.Separator) + "." + string(filepath.Separator) + name,
			dir + string(filepath.Separator) + "sub" + string(filepath.Separator) + ".." + string(filepath.Separator) + name,
		} {
			if other, err := lock.SidecarPath(root, spelling); err != nil || other != got {
				t.Fatalf("SidecarPath(%q, %q) = %q, %v; want %q, as for %q", root, spelling, other, err, got, target)
			}
		}
	})
}
