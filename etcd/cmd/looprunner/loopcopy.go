package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/examples/looprunner/runner"
	"github.com/filetxn/filetxn/internal/loopnames"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
	"github.com/filetxn/filetxn/loopstate/harness"
)

// loopImportDetails and loopExportDetails are the help of loop import and
// export after the flags.
const (
	loopImportDetails = `Copies the loop NAME of -root DIR from files into etcd, byte for byte:
its state, DIR/loops/NAME/.state.loop, becomes the document of that name,
and each line of its ticks.jsonl one tick line, in order, as loop commands
with -etcd keep them. It takes the loop's lock file (.state.lock), then the
loop's lock in etcd, and reads both sides: no tick or loop command of
either runs in between. The loop must exist on files (exit 3) and its
state parse (exit 65). A last line of ticks.jsonl without its newline, as
a crash can leave, is torn: it is not copied, as the loop's reader skips
it. A loop the same in etcd already is left as it is. One that differs is
replaced if it is still what the last import or export on this host
copied (its SHA-256 is kept under the state directory, in etcd-copies/);
otherwise it may hold ticks made on etcd, and the import is refused
(exit 1) unless -force is given. Replacing removes the loop in etcd
first, then writes its tick lines, at most 100 to a commit (etcd's
transactions are bounded), and the state with the last of them: a crash
in between leaves no loop in etcd (tick lines without a state), and the
same command run again copies it. The files are left as they are; export refreshes them.
`
	loopExportDetails = `Copies the loop NAME from etcd into -root DIR, byte for byte, under both
locks, as import does (the lock file first, then etcd's): its tick lines,
in order, become DIR/loops/NAME/ticks.jsonl and its state .state.loop,
each replaced atomically, the log first; the loop's directory and lock
file are made if missing. The loop must exist in etcd (exit 3) and its
state parse (exit 65). Files equal to it already (a torn last line of
ticks.jsonl aside) are left as they are. Files that differ are replaced
if they are still what the last import or export on this host copied, so
that export alone keeps a file view of the loop fresh; otherwise they may
hold ticks made on files, and the export is refused (exit 1) unless
-force is given. A crash between the two writes leaves the new log with
the old state: the same command with -force copies the state. The loop
stays in etcd: export it again to refresh the files.
`
)

// maxTickPuts and maxTickBytes bound the tick lines of one commit of an
// import, below etcd's default limits of a transaction (128 operations,
// 1.5 MiB).
const (
	maxTickPuts  = 100
	maxTickBytes = 512 << 10
)

// loopCopyResult is the output of loop import and export with -json.
type loopCopyResult struct {
	Prefix    string `json:"prefix"`
	Loop      string `json:"loop"`
	State     string `json:"state"`      // the state's document in etcd
	Bytes     int    `json:"bytes"`      // the size of the state copied
	Ticks     int    `json:"ticks"`      // the tick lines copied
	TickBytes int    `json:"tick_bytes"` // their size, newlines included
	Torn      int    `json:"torn"`       // the size of a torn last line of ticks.jsonl, not copied
	Written   bool   `json:"written"`    // false: the destination held the same loop
	Replaced  bool   `json:"replaced"`   // a destination loop that differed was overwritten
	Forced    bool   `json:"forced"`     // by -force: it had changed since the last copy, or none was recorded
}

// loopCopyCommand returns "loop import" (export false) or "loop export".
func (e *etcdFlags) loopCopyCommand(export bool) runner.Command {
	cmd := runner.Command{Args: "NAME",
		Summary: "copy a loop (state and tick log) from files into etcd, byte for byte, under both locks (needs -etcd)",
		Details: loopImportDetails}
	if export {
		cmd.Summary = "copy a loop from etcd into its files, byte for byte, under both locks (needs -etcd)"
		cmd.Details = loopExportDetails
	}
	cmd.Run = func(c *runner.Cmd, args []string) error { return e.loopCopy(c, export, args) }
	return cmd
}

// loopSide is a loop as one side holds it: its state (nil for none: no
// loop, whatever lines there are) and its tick log.
type loopSide struct{ state, ticks []byte }

func (s loopSide) none() bool { return s.state == nil && len(s.ticks) == 0 }

func (s loopSide) equal(o loopSide) bool {
	return (s.state == nil) == (o.state == nil) && bytes.Equal(s.state, o.state) && bytes.Equal(s.ticks, o.ticks)
}

// digest is the SHA-256 of the state's length, the state and the log.
func (s loopSide) digest() string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(s.state)) + "\x00"))
	h.Write(s.state)
	h.Write(s.ticks)
	return hex.EncodeToString(h.Sum(nil))
}

// splitTorn returns log without a last line that lacks its newline, and
// the size of that line.
func splitTorn(log []byte) ([]byte, int) {
	i := bytes.LastIndexByte(log, '\n')
	return log[:i+1], len(log) - (i + 1)
}

// lines returns the lines of log, each with its newline (the last one
// without, if log does not end in one).
func lines(log []byte) [][]byte {
	var out [][]byte
	for len(log) > 0 {
		i := bytes.IndexByte(log, '\n')
		if i < 0 {
			i = len(log) - 1
		}
		out, log = append(out, log[:i+1]), log[i+1:]
	}
	return out
}

// loopCopy is loop import (export false) or loop export.
func (e *etcdFlags) loopCopy(c *runner.Cmd, export bool, args []string) error {
	fs := c.FlagSet()
	dir := fs.String("root", os.Getenv(harness.EnvRoot), "the root `DIR` on files, which holds the loops in DIR/loops/NAME, and names them in etcd (default $"+harness.EnvRoot+")")
	force := fs.Bool("force", false, "replace a destination loop that changed since the last copy, or that no copy recorded here made")
	pos, err := c.Parse(fs, args, "root")
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return runner.Usagef("want one loop name, got %d arguments", len(pos))
	}
	name := pos[0]
	b, err := e.getBackend()
	if err != nil {
		return err
	}
	if b == nil {
		return runner.Usagef("no etcd cluster: give -etcd ENDPOINTS or set $%s", envEndpoints)
	}
	stateRoot, err := c.StateRoot()
	if err != nil {
		return err
	}
	opts := []filetxn.Option(nil)
	if export {
		opts = append(opts, filetxn.WithBackend(b))
	}
	from, err := loopstate.NewRoot(*dir, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := c.Context()
	defer cancel()
	// The source loop must exist; Open checks the name first.
	l, err := from.Open(ctx, name)
	if err != nil {
		return err
	}
	lockPath := l.LockPath()
	loopDir := filepath.Dir(lockPath)
	statePath := filepath.Join(loopDir, loopnames.State)
	logPath := filepath.Join(loopDir, loopnames.TickLog)
	prefix := loopnames.TicksPrefix(*dir, name)
	if export {
		// As Create lays a loop out: its directory and its lock file.
		if err := os.MkdirAll(loopDir, 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		f.Close()
	}
	onFile, err := filetxn.NewStore[*[]byte](statePath, raw{}, append(c.EngineOptions(), filetxn.WithLockPath(lockPath))...)
	if err != nil {
		return err
	}
	onEtcd, err := filetxn.NewStore[*[]byte](statePath, raw{}, append(c.EngineOptions(), filetxn.WithBackend(b), filetxn.WithLockPath(lockPath))...)
	if err != nil {
		return err
	}
	rec, err := recordPath(stateRoot, e.prefixKey(), loopDir)
	if err != nil {
		return err
	}
	res := loopCopyResult{Prefix: e.prefixKey(), Loop: name, State: loopnames.Doc(statePath)}
	// The file's lock first, then etcd's, in both directions, as ledger
	// and board import and export take them.
	fileHeld := false
	err = onFile.Locked(ctx, func(ftx *filetxn.Tx) error {
		fileHeld = true
		return onEtcd.Locked(ctx, func(etx *filetxn.Tx) error {
			base, err := readRecord(rec)
			if err != nil {
				return err
			}
			var file, remote loopSide
			if file.state, err = ftx.Read(statePath); err != nil {
				return err
			}
			if file.ticks, err = ftx.Read(logPath); err != nil {
				return err
			}
			file.ticks, res.Torn = splitTorn(file.ticks)
			if remote.state, err = etx.Read(statePath); err != nil {
				return err
			}
			ents, err := b.List(ctx, prefix)
			if err != nil {
				return err
			}
			for _, en := range ents {
				remote.ticks = append(remote.ticks, en.Data...)
			}
			src, dst, where := file, remote, "on files"
			if export {
				src, dst, where = remote, file, "in etcd"
			}
			if src.state == nil {
				return runner.NotFoundf("no loop %s %s: %s does not exist", name, where, res.State)
			}
			var d loopstate.Doc
			if err := d.UnmarshalJSON(src.state); err != nil {
				return fmt.Errorf("%s %s: not a loop's state, nothing copied: %w", statePath, where, err)
			}
			if d.Name != name {
				return fmt.Errorf("%s %s: not the state of loop %s, nothing copied: %w", statePath, where, name,
					&filetxn.FormatError{Key: "name", Err: fmt.Errorf("name is %q", d.Name)})
			}
			res.Bytes, res.TickBytes = len(src.state), len(src.ticks)
			res.Ticks = len(lines(src.ticks))
			switch {
			case src.equal(dst):
				return writeRecord(rec, src.digest())
			case dst.state != nil && base != "" && dst.digest() == base:
				res.Written, res.Replaced = true, true // unchanged since the last copy
			case dst.state != nil && !*force:
				why := "no copy between them is recorded here"
				switch {
				case base != "" && export:
					why = "the loop on files changed since the last copy"
				case base != "":
					why = "the loop in etcd changed since the last copy"
				}
				return runner.Refusedf("loop %s differs on files and in etcd (%d ticks %s, %d in the other), and %s: nothing copied; give -force to replace it",
					name, res.Ticks, where, len(lines(dst.ticks)), why)
			default:
				// Tick lines without a state (of a copy cut short, or a
				// busy line that outlived a Delete) are no loop: replaced.
				res.Written, res.Replaced, res.Forced = true, dst.state != nil, dst.state != nil
			}
			if export {
				if _, err := ftx.Write(logPath, src.ticks); err != nil {
					return err
				}
				if _, err := ftx.Write(statePath, src.state); err != nil {
					return err
				}
			} else if err := importLoop(ctx, b, etx, dst, src, res.State, prefix); err != nil {
				return err
			}
			return writeRecord(rec, src.digest())
		})
	})
	var busy *lock.BusyError
	if err != nil && !fileHeld && (errors.As(err, &busy) || errors.Is(err, lock.ErrWouldBlock)) {
		// The loop's lock file: explain, which cannot tell its path from
		// the etcd lock's name, would blame a session in etcd.
		return runner.Busyf("%v (the loop's lock file, held by another process of this host)", err)
	}
	if err != nil {
		return err
	}
	if c.JSON() {
		return c.PrintJSON(res)
	}
	dirWord := "into etcd"
	if export {
		dirWord = "from etcd"
	}
	how := ""
	switch {
	case !res.Written:
		fmt.Fprintf(c.Stdout(), "loop %s: the same state (%d bytes) and %d ticks on files and in etcd already; nothing written\n", name, res.Bytes, res.Ticks)
	case res.Forced:
		how = ", replacing what differed (-force)"
	case res.Replaced:
		how = ", replacing the last copy"
	}
	if res.Written {
		fmt.Fprintf(c.Stdout(), "loop %s: copied %s (state %d bytes, %d ticks)%s\n", name, dirWord, res.Bytes, res.Ticks, how)
	}
	if res.Torn > 0 {
		fmt.Fprintf(c.Stdout(), "loop %s: the last line of %s has no newline (%d bytes, torn by a crash): not copied\n", name, logPath, res.Torn)
	}
	return nil
}

// importLoop writes src into etcd, replacing dst: a commit that removes
// dst, if there is one, then the tick lines, at most maxTickPuts and
// maxTickBytes to a commit, and the state with the last of them, each
// fenced by etx's lock. etcd refuses a transaction that removes a prefix
// and writes under it, hence the first commit apart.
func importLoop(ctx context.Context, b *etcd.Backend, etx *filetxn.Tx, dst, src loopSide, state, prefix string) error {
	held := []filetxn.Held{etx.Held()}
	if !dst.none() {
		puts := []filetxn.Put{{Name: state, Remove: true}, {Name: prefix, Remove: true, Prefix: true}}
		if err := b.Commit(ctx, held, puts, false); err != nil {
			return err
		}
	}
	ls := lines(src.ticks)
	for {
		n, size := 0, 0
		for n < len(ls) && n < maxTickPuts && (n == 0 || size+len(ls[n]) <= maxTickBytes) {
			size += len(ls[n])
			n++
		}
		var puts []filetxn.Put
		for i, tick := range loopnames.Ticks(prefix, time.Now(), n) {
			puts = append(puts, filetxn.Put{Name: tick, Data: ls[i]})
		}
		ls = ls[n:]
		if len(ls) == 0 {
			puts = append(puts, filetxn.Put{Name: state, Data: src.state})
		}
		if err := b.Commit(ctx, held, puts, false); err != nil {
			return err
		}
		if len(ls) == 0 {
			return nil
		}
	}
}
