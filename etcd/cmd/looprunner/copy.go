package main

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/examples/looprunner/runner"
	"github.com/filetxn/filetxn/ledger"
)

// A kind is what import and export copy: a ledger or a board, with how
// its store finds its lock and how its bytes are checked.
type kind struct {
	name  string                                                    // "ledger"
	what  string                                                    // its file, for help: "deferred-work.md"
	lock  func(file string, opts ...filetxn.Option) (string, error) // the lock of its store made with opts
	parse func(data []byte) error
	// archive returns the sibling that the kind's lock guards too, copied
	// with it ("" for none): a ledger's deferred-work-archive.md.
	archive func(file string) string
}

var ledgerKind = kind{
	name: "ledger",
	what: "deferred-work.md",
	lock: func(file string, opts ...filetxn.Option) (string, error) {
		s, err := ledger.Open(file, opts...)
		if err != nil {
			return "", err
		}
		return s.LockPath()
	},
	parse:   func(data []byte) error { _, err := ledger.Parse(data); return err },
	archive: func(file string) string { return filepath.Join(filepath.Dir(file), "deferred-work-archive.md") },
}

var boardKind = kind{
	name: "board",
	what: "sprint-status.yaml",
	lock: func(file string, opts ...filetxn.Option) (string, error) {
		s, err := board.Open(file, opts...)
		if err != nil {
			return "", err
		}
		return s.LockPath()
	},
	parse:   func(data []byte) error { _, err := board.Parse(data); return err },
	archive: func(string) string { return "" },
}

// importDetails and exportDetails are the help of import and export after
// the flags: %[1]s is the kind, %[2]s more (archiveDetails for a ledger).
const (
	importDetails = `Copies FILE into etcd, byte for byte, as the document that -file FILE
names with -etcd. It takes FILE's lock (the sidecar under the state
directory, which bmad-loop and looprunner without -etcd take), then the
document's lock in etcd, reads both, and writes the document in one atomic
step: no writer of either runs in between. FILE must exist (exit 3) and
parse as a %[1]s (exit 65). A document equal to FILE already is left as it
is. One that differs is replaced if it is still what the last import or
export on this host copied (its SHA-256 is kept under the state directory,
in etcd-copies/); otherwise it may hold changes made on etcd, and the
import is refused (exit 1) unless -force is given. FILE is left as it is:
a reader of the file still sees it, but writers on etcd do not change it;
export refreshes it.%[2]s
`
	exportDetails = `Copies the document FILE from etcd into FILE, byte for byte, under both
locks, as import does (FILE's first, then etcd's), replacing FILE
atomically: a reader of the file sees the old %[1]s or the new one, never a
mix. The document must exist (exit 3) and parse as a %[1]s (exit 65). A
FILE equal to it already is left as it is. One that differs is replaced
if it is still what the last import or export on this host copied, so
that export alone keeps a file view of the document fresh; otherwise it
may hold changes made on files, and the export is refused (exit 1) unless
-force is given. The document stays in etcd: export it again to refresh
the file, or stop giving -etcd to move the %[1]s back to files.%[2]s
`
	// archiveDetails ends the help of a ledger's import and export.
	archiveDetails = `

The ledger's archive, deferred-work-archive.md beside it, which the
ledger's lock guards too, is copied with it when the source has one, on
the same terms, and written first, as ledger archive writes them: a crash
between the two writes leaves the archive copied and the ledger not, and
the same command run again copies the ledger.`
)

// copyResult is the output of import and export with -json.
type copyResult struct {
	Prefix string      `json:"prefix"`
	Copied []docResult `json:"copied"` // the archive (if any) first, then the file named
}

// docResult is one file of an import or export and its document.
type docResult struct {
	File     string `json:"file"`
	Name     string `json:"name"`     // the document's name in etcd
	Bytes    int    `json:"bytes"`    // the size of what was copied
	Written  bool   `json:"written"`  // false: the destination held the same bytes
	Replaced bool   `json:"replaced"` // a destination that differed was overwritten
	Forced   bool   `json:"forced"`   // by -force: it had changed since the last copy, or none was recorded
}

// copyCommand returns "KIND import" (export false) or "KIND export".
func (e *etcdFlags) copyCommand(k kind, export bool) runner.Command {
	cmd := runner.Command{Args: "FILE"}
	more := ""
	if k.archive("x") != "" {
		more = archiveDetails
	}
	if export {
		cmd.Summary = fmt.Sprintf("copy a %s from etcd into its file, byte for byte, under both locks (needs -etcd)", k.name)
		cmd.Details = fmt.Sprintf(exportDetails, k.name, more)
	} else {
		cmd.Summary = fmt.Sprintf("copy a %s file into etcd, byte for byte, under both locks (needs -etcd)", k.name)
		cmd.Details = fmt.Sprintf(importDetails, k.name, more)
	}
	cmd.Run = func(c *runner.Cmd, args []string) error { return e.copy(c, k, export, args) }
	return cmd
}

// copy is import (export false) or export of the kind k.
func (e *etcdFlags) copy(c *runner.Cmd, k kind, export bool, args []string) error {
	fs := c.FlagSet()
	force := fs.Bool("force", false, "replace a destination that changed since the last copy, or that no copy recorded here made")
	pos, err := c.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return runner.Usagef("want one %s file (%s), got %d arguments", k.name, k.what, len(pos))
	}
	file := pos[0]
	b, err := e.getBackend()
	if err != nil {
		return err
	}
	if b == nil {
		return runner.Usagef("no etcd cluster: give -etcd ENDPOINTS or set $%s", envEndpoints)
	}
	root, err := c.StateRoot()
	if err != nil {
		return err
	}
	// The locks the stores of the kind take: a ledger command on files,
	// bmad-loop, and a command with -etcd.
	fileLock, err := k.lock(file, filetxn.WithStateRoot(root))
	if err != nil {
		return err
	}
	etcdLock, err := k.lock(file, filetxn.WithBackend(b))
	if err != nil {
		return err
	}
	onFile, err := filetxn.NewStore[*[]byte](file, raw{}, append(c.EngineOptions(), filetxn.WithLockPath(fileLock))...)
	if err != nil {
		return err
	}
	onEtcd, err := filetxn.NewStore[*[]byte](file, raw{}, append(c.EngineOptions(), filetxn.WithBackend(b), filetxn.WithLockPath(etcdLock))...)
	if err != nil {
		return err
	}
	res := copyResult{Prefix: e.prefixKey()}
	files := []string{file}
	if a := k.archive(file); a != "" {
		files = []string{a, file} // as ledger archive writes them: the archive first
	}
	from := "etcd"
	if !export {
		from = "the file"
	}
	ctx, cancel := c.Context()
	defer cancel()
	// The file's lock first, then etcd's, in both directions: the only
	// commands that hold both take them in one order.
	err = onFile.Locked(ctx, func(ftx *filetxn.Tx) error {
		return onEtcd.Locked(ctx, func(etx *filetxn.Tx) error {
			var writes [][]byte            // of each of files, nil for none
			records := map[string]string{} // record path: digest, once copied
			for _, f := range files {
				d := docResult{File: f, Name: filepath.ToSlash(filepath.Clean(f))}
				rec, err := recordPath(root, res.Prefix, f)
				if err != nil {
					return err
				}
				base, err := readRecord(rec)
				if err != nil {
					return err
				}
				fileData, err := ftx.Read(f)
				if err != nil {
					return err
				}
				etcdData, err := etx.Read(f)
				if err != nil {
					return err
				}
				src, dst := fileData, etcdData
				if export {
					src, dst = etcdData, fileData
				}
				switch {
				case src == nil && f != file:
					writes = append(writes, nil) // no archive to copy
					continue
				case src == nil && export:
					return runner.NotFoundf("no such document in etcd: %s (prefix %s)", d.Name, res.Prefix)
				case src == nil:
					return runner.NotFoundf("no such file: %s", f)
				}
				if err := k.parse(src); err != nil {
					return fmt.Errorf("%s in %s: not a %s, nothing copied: %w", f, from, k.name, err)
				}
				d.Bytes = len(src)
				records[rec] = digest(src)
				switch {
				case dst != nil && bytes.Equal(src, dst):
					src = nil
				case dst != nil && base != "" && digest(dst) == base:
					d.Written, d.Replaced = true, true // unchanged since the last copy
				case dst != nil && !*force:
					why := "no copy between them is recorded here"
					if base != "" {
						why = "the " + map[bool]string{true: "file", false: "document"}[export] + " changed since the last copy"
					}
					return runner.Refusedf("%s differs in the file and in etcd (%d bytes in %s, %d in the other), and %s: nothing copied; give -force to replace it", f, len(src), from, len(dst), why)
				default:
					d.Written, d.Replaced, d.Forced = true, dst != nil, dst != nil
				}
				writes = append(writes, src)
				res.Copied = append(res.Copied, d)
			}
			for i, data := range writes {
				var err error
				switch {
				case data == nil:
				case export:
					_, err = ftx.Write(files[i], data)
				default:
					_, err = etx.Write(files[i], data)
				}
				if err != nil {
					return err
				}
			}
			for rec, sum := range records {
				if err := writeRecord(rec, sum); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if c.JSON() {
		return c.PrintJSON(res)
	}
	dir := "into etcd"
	if export {
		dir = "from etcd"
	}
	for _, d := range res.Copied {
		switch {
		case !d.Written:
			fmt.Fprintf(c.Stdout(), "%s: the same %d bytes in the file and in etcd already; nothing written\n", d.File, d.Bytes)
		case d.Forced:
			fmt.Fprintf(c.Stdout(), "%s: copied %s (%d bytes), replacing what differed (-force)\n", d.File, dir, d.Bytes)
		case d.Replaced:
			fmt.Fprintf(c.Stdout(), "%s: copied %s (%d bytes), replacing the last copy\n", d.File, dir, d.Bytes)
		default:
			fmt.Fprintf(c.Stdout(), "%s: copied %s (%d bytes)\n", d.File, dir, d.Bytes)
		}
	}
	return nil
}

// raw is the codec of a store whose document is its bytes, as they are.
type raw struct{}

func (raw) Decode(data []byte) (*[]byte, error) { return &data, nil }
func (raw) Encode(doc *[]byte) ([]byte, error)  { return *doc, nil }
