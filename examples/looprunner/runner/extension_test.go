package runner

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/stretchr/testify/require"
)

// memBackend is a filetxn.Backend in memory, for the extension's tests:
// one lock per name, held by one Held at a time; a commit checks only that
// its locks are held.
type memBackend struct {
	mu    sync.Mutex
	docs  map[string][]byte        // under mu
	locks map[string]chan struct{} // a full channel is a held lock; under mu
}

func newMemBackend() *memBackend {
	return &memBackend{docs: map[string][]byte{}, locks: map[string]chan struct{}{}}
}

type memHeld struct {
	b    *memBackend
	name string
	once sync.Once
}

func (b *memBackend) Lock(ctx context.Context, name string, wait bool) (filetxn.Held, error) {
	b.mu.Lock()
	ch := b.locks[name]
	if ch == nil {
		ch = make(chan struct{}, 1)
		b.locks[name] = ch
	}
	b.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return &memHeld{b: b, name: name}, nil
	default:
	}
	if !wait {
		return nil, errors.New("busy")
	}
	select {
	case ch <- struct{}{}:
		return &memHeld{b: b, name: name}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *memBackend) Get(ctx context.Context, name string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.docs[name]), nil
}

func (b *memBackend) Commit(ctx context.Context, held []filetxn.Held, puts []filetxn.Put, release bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range puts {
		if p.Remove {
			delete(b.docs, p.Name)
		} else {
			b.docs[p.Name] = bytes.Clone(p.Data)
		}
	}
	return nil
}

func (b *memBackend) Create(ctx context.Context, name string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.docs[name]; ok {
		return fs.ErrExist
	}
	b.docs[name] = bytes.Clone(data)
	return nil
}

// List lists in the order of names, not of creation: the extension's tests
// list nothing.
func (b *memBackend) List(ctx context.Context, prefix string) ([]filetxn.Entry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []filetxn.Entry
	for _, name := range slices.Sorted(maps.Keys(b.docs)) {
		if strings.HasPrefix(name, prefix) {
			out = append(out, filetxn.Entry{Name: name, Data: bytes.Clone(b.docs[name])})
		}
	}
	return out, nil
}

func (h *memHeld) Read(ctx context.Context, name string) ([]byte, error) { return h.b.Get(ctx, name) }

func (h *memHeld) Release() error {
	h.once.Do(func() {
		h.b.mu.Lock()
		ch := h.b.locks[h.name]
		h.b.mu.Unlock()
		<-ch
	})
	return nil
}

// memExtension is an extension (one per Main: its flag keeps its value) whose global flag -mem keeps every ledger
// and board in b, refuses the loop commands then, and adds the command
// "ledger dump", which prints the ledger document's bytes in b.
func memExtension(b *memBackend) Extension {
	var on bool
	return Extension{
		Usage: "[-mem]",
		Help:  "-mem keeps ledgers and boards in memory.\n",
		Flags: func(fs *flag.FlagSet) { fs.BoolVar(&on, "mem", on, "keep ledgers and boards in memory") },
		StoreOptions: func(c *Cmd) ([]filetxn.Option, error) {
			if !on {
				return nil, nil
			}
			return []filetxn.Option{filetxn.WithBackend(b)}, nil
		},
		Loops: func(c *Cmd) error {
			if on {
				return Usagef("not with -mem")
			}
			return nil
		},
		Commands: map[string]map[string]Command{"ledger": {"dump": {
			Args:    "NAME",
			Summary: "print a ledger document kept in memory",
			Run: func(c *Cmd, args []string) error {
				pos, err := c.Parse(c.FlagSet(), args)
				if err != nil {
					return err
				}
				if len(pos) != 1 {
					return Usagef("want one name")
				}
				data, _ := b.Get(context.Background(), pos[0])
				if data == nil {
					return NotFoundf("no such document: %s", pos[0])
				}
				_, err = c.Stdout().Write(data)
				return err
			},
		}}},
	}
}

// runExt runs the command line with ext in dir, in this process.
func runExt(t *testing.T, dir string, ext Extension, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	t.Chdir(dir)
	code := Main(append([]string{"-state-dir", filepath.Join(dir, "state")}, args...), strings.NewReader(""), &stdout, &stderr, ext)
	return result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// TestAnExtensionKeepsEveryLedgerInItsBackend: with the extension's flag,
// before or after the command, ledger add, list and batch work on the
// backend's document and create no file; the extension's command runs and
// is listed in the help; loop commands are refused as the extension says.
// Without the flag the ledger is a file. Ablation: openLedger without the
// extensions' options writes dw.md to disk, and the test fails.
func TestAnExtensionKeepsEveryLedgerInItsBackend(t *testing.T) {
	dir := t.TempDir()
	b := newMemBackend()
	add := []string{"ledger", "add", "-file", "dw.md", "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r"}

	r := runExt(t, dir, memExtension(b), append([]string{"-mem"}, add...)...)
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, "DW-1\n", r.stdout, "%s", r)
	r = runExt(t, dir, memExtension(b), append(add[:len(add):len(add)], "-mem", "-title", "u", "-origin", "o2")...)
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, "DW-2\n", r.stdout, "%s", r)
	_, err := os.Stat(filepath.Join(dir, "dw.md"))
	require.ErrorIs(t, err, os.ErrNotExist, "ledger add -mem made a file")

	r = runExt(t, dir, memExtension(b), "-mem", "ledger", "dump", "dw.md")
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, "### DW-2: u", "%s", r)
	r = runExt(t, dir, memExtension(b), "-mem", "ledger", "list", "-file", "dw.md")
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, "DW-2", "%s", r)
	r = runExt(t, dir, memExtension(b), "-mem", "ledger", "list", "-file", "none.md")
	require.Equal(t, exitNotFound, r.code, "a ledger that is not in the backend: %s", r)

	r = runExt(t, dir, memExtension(b), "-mem", "loop", "list", "-root", dir)
	require.Equal(t, exitUsage, r.code, "%s", r)
	require.Equal(t, "loop list: not with -mem; see 'looprunner loop list -h'\n", r.stderr, "%s", r)

	r = runExt(t, dir, memExtension(b), "-h")
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, "[-json] [-mem] AREA COMMAND", "%s", r)
	require.Contains(t, r.stdout, "ledger dump ", "%s", r)
	require.True(t, strings.HasSuffix(r.stdout, "\n-mem keeps ledgers and boards in memory.\n"), "%s", r)
	r = runExt(t, dir, memExtension(b), "ledger", "dump", "-h")
	require.Equal(t, 0, r.code, "%s", r)
	own, global, _ := strings.Cut(r.stdout, "global flags")
	require.Contains(t, global, "  -mem", "-mem is a global flag: %s", r)
	require.NotContains(t, own, "-mem", "%s", r)

	r = runExt(t, dir, memExtension(b), add...)
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, "DW-1\n", r.stdout, "without -mem the ledger is a file: %s", r)
	_, err = os.Stat(filepath.Join(dir, "dw.md"))
	require.NoError(t, err)
}

// TestAnExtensionsCommandMayNotShadowAnother: Main panics on an extension
// whose command is already one.
func TestAnExtensionsCommandMayNotShadowAnother(t *testing.T) {
	for _, ext := range []Extension{
		{Commands: map[string]map[string]Command{"ledger": {"add": {}}}},
		{Commands: map[string]map[string]Command{"": {"ledger": {}}}},
		{Commands: map[string]map[string]Command{"nowhere": {"x": {}}}},
	} {
		require.Panics(t, func() { Main([]string{"version"}, nil, new(bytes.Buffer), new(bytes.Buffer), ext) })
	}
}

// TestAnExtensionExplainsAFailure: Explain's error is what a failed
// command prints and exits with; a command that succeeds does not call it.
// Ablation: fail without explainExt prints the usage error, exit 2.
func TestAnExtensionExplainsAFailure(t *testing.T) {
	calls := 0
	ext := Extension{Explain: func(c *Cmd, err error) error {
		calls++
		return Busyf("%s explained: %v", c.Name(), err)
	}}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"ledger", "list"}, strings.NewReader(""), &stdout, &stderr, ext)
	require.Equal(t, exitBusy, code, "stderr: %s", stderr.String())
	require.Equal(t, "ledger list: ledger list explained: missing -file\n", stderr.String())
	code = Main([]string{"version"}, strings.NewReader(""), &stdout, &stderr, ext)
	require.Equal(t, 0, code)
	require.Equal(t, 1, calls, "Explain calls")
}
