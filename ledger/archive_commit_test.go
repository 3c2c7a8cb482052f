package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/filetxn/filetxn/internal/seam"
)

// A hit is one call of seam.At at a file-system step: the point, the path,
// and how many calls of that point on that path came before it in the call.
type hit struct {
	p    seam.Point
	path string
	n    int
}

// archiveHits returns every file-system step an Archive of seed makes,
// each once, in a first run's order.
func archiveHits(t *testing.T, seed string) []hit {
	s := newStore(t, seed)
	var mu sync.Mutex
	var hits []hit
	seen := map[[2]string]int{}
	remove := seam.Set(t, func(p seam.Point, path string) error {
		if !p.Fails() {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		k := [2]string{string(p), relTo(s, path)}
		hits = append(hits, hit{p, k[1], seen[k]})
		seen[k]++
		return nil
	})
	defer remove()
	if _, err := s.Archive(context.Background(), "", "2026-08-24"); err != nil {
		t.Fatal(err)
	}
	return hits
}

// relTo names path by its place in s's directory or its state root, the
// lock file (whose name holds a hash of the ledger's path) as "LOCK", so
// that the hits of one store name the steps of another.
func relTo(s *Store, path string) string {
	if lp, _ := s.LockPath(); strings.HasPrefix(path, lp) {
		return "LOCK" + path[len(lp):]
	}
	root := filepath.Dir(filepath.Dir(s.path)) // newStore's temporary directory
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// TestArchiveIsAllOrNothingUnderAFaultAtEveryStep fails, one run each, every
// file-system step of an Archive (each read, the lock, each staged file's
// create, write and fsync, the intent record's write and fsync, each
// directory fsync, each rename, the record's removal) with ENOSPC. Each
// failure matches ENOSPC; after the next transaction on the ledger (a Mutate
// that changes nothing) the two files are both as they were or both archived,
// and both archived exactly when Archive returned the ids; nothing is left
// beside them or under the state root; and a second Archive moves what is
// left to move.
// Ablation: going back to two writes (the archive, then the ledger, each its
// own Tx.Write under Locked) is red at every step of the ledger's write (its
// create, write, fsync and rename): the archive holds the bodies and the
// ledger no stub after the next transaction.
func TestArchiveIsAllOrNothingUnderAFaultAtEveryStep(t *testing.T) {
	ctx := context.Background()
	oldLedger, newArchive := mustParse(t, ledgerFixture), mustParse(t, "")
	if _, err := oldLedger.ArchiveInto(newArchive, "", "2026-08-24"); err != nil {
		t.Fatal(err)
	}
	newLedger := oldLedger.textString()
	hits := archiveHits(t, ledgerFixture)
	for _, want := range []seam.Point{seam.Create, seam.Write, seam.Sync, seam.Intent, seam.Rename, seam.SyncDir, seam.Retire} {
		if !slices.ContainsFunc(hits, func(h hit) bool { return h.p == want }) {
			t.Errorf("an Archive makes no %s step: %v", want, hits)
		}
	}
	for _, h := range hits {
		t.Run(fmt.Sprintf("%s %s #%d", h.p, h.path, h.n), func(t *testing.T) {
			s := newStore(t, ledgerFixture)
			var mu sync.Mutex
			seen := map[[2]string]int{}
			fired := false
			remove := seam.Set(t, func(p seam.Point, path string) error {
				if !p.Fails() {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				k := [2]string{string(p), relTo(s, path)}
				n := seen[k]
				seen[k]++
				if p == h.p && k[1] == h.path && n == h.n {
					fired = true
					return syscall.ENOSPC
				}
				return nil
			})
			ids, err := s.Archive(ctx, "", "2026-08-24")
			remove()
			if !fired {
				t.Fatalf("the fault never fired")
			}
			if err != nil && !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Archive = %v, want an error matching ENOSPC", err)
			}
			archived := ids != nil
			if err == nil && !archived {
				t.Fatalf("Archive = %v, nil: nothing moved and no error", ids)
			}
			if _, err := s.Mutate(ctx, func(*Doc) error { return nil }); err != nil {
				t.Fatalf("the next transaction = %v", err)
			}
			gotLedger, gotArchive := string(readOrNil(t, s.path)), readOrNil(t, s.archive)
			switch {
			case archived && (gotLedger != newLedger || string(gotArchive) != newArchive.textString()):
				t.Fatalf("Archive = %v, %v, but after the next transaction ledger = %q, archive = %q", ids, err, gotLedger, gotArchive)
			case !archived && (gotLedger != ledgerFixture || gotArchive != nil):
				t.Fatalf("Archive = %v, %v (nothing moved), but after the next transaction ledger = %q, archive = %q", ids, err, gotLedger, gotArchive)
			}
			if left := leftovers(t, s); len(left) > 0 {
				t.Errorf("left behind after the next transaction: %v", left)
			}
			again, err := s.Archive(ctx, "", "2026-08-30")
			if want := []string{"DW-2"}; err != nil || archived && again != nil || !archived && !slices.Equal(again, want) {
				t.Errorf("Archive again = %v, %v (first: %v)", again, err, ids)
			}
			if string(readOrNil(t, s.archive)) != newArchive.textString() && archived {
				t.Errorf("Archive again changed the archive")
			}
		})
	}
}

// leftovers returns the names beside the ledger and under the state root
// that are neither the two files nor the lock.
func leftovers(t *testing.T, s *Store) []string {
	t.Helper()
	var left []string
	lp, _ := s.LockPath()
	for _, dir := range []string{filepath.Dir(s.path), filepath.Dir(lp)} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if p != s.path && p != s.archive && p != lp {
				left = append(left, p)
			}
		}
	}
	return left
}

// TestArchiveCompletesTheSplitLeftByAnOlderVersion: an older version of
// this package (and bmad-loop's archiver) wrote the archive, then the
// ledger; a crash between them left the bodies in the archive and the
// ledger whole. Archive completes the stubs, stamped with the crashed run's
// date, and appends no body again.
// Ablation: dropping ArchiveInto's check for a twin in the archive appends
// the body again (red on "appended to the archive").
func TestArchiveCompletesTheSplitLeftByAnOlderVersion(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ledgerFixture)
	lost, archive := mustParse(t, ledgerFixture), mustParse(t, "")
	if _, err := lost.ArchiveInto(archive, "", "2026-08-24"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.archive, archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err := s.Archive(ctx, "", "2026-08-30")
	if err != nil || !slices.Equal(ids, []string{"DW-2"}) {
		t.Fatalf("Archive after an older version's split = %v, %v, want [DW-2]", ids, err)
	}
	if got := string(readOrNil(t, s.archive)); got != archive.textString() {
		t.Errorf("Archive appended to the archive: %q", got[min(len(got), len(archive.textString())):])
	}
	if got := string(readOrNil(t, s.path)); got != lost.textString() {
		t.Errorf("ledger = %q, want the stubs of the crashed run %q", got, lost.textString())
	}
}

// TestArchiveAfterARenameFailureBetweenTheFiles fails the ledger's rename,
// after the archive's: the commit stands. Archive returns the ids with an
// error that says so; a lock-free reader sees the archive new and the
// ledger old until the next transaction (here an Append), which publishes
// the stubs before it appends.
// Ablation: two writes (Locked, archive then ledger) leave the ledger
// without its stubs after the Append (red on "after the next transaction").
func TestArchiveAfterARenameFailureBetweenTheFiles(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ledgerFixture)
	remove := seam.Set(t, func(p seam.Point, path string) error {
		if p == seam.Rename && path == s.path {
			return syscall.EIO
		}
		return nil
	})
	ids, err := s.Archive(ctx, "", "2026-08-24")
	remove()
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "committed") || !slices.Equal(ids, []string{"DW-2"}) {
		t.Fatalf("Archive with the ledger's rename failing = %v, %v, want [DW-2] and an EIO error that says the commit stands", ids, err)
	}
	if got := string(readOrNil(t, s.path)); got != ledgerFixture {
		t.Fatalf("ledger after the failed rename = %q, want it as it was", got)
	}
	archive := string(readOrNil(t, s.archive))
	if !strings.Contains(archive, "archived: 2026-08-24") {
		t.Fatalf("archive after the failed rename = %q, want the bodies", archive)
	}
	got, err := s.Append(ctx, Spec{Title: "later", Origin: "o-later", SourceSpec: "s.md", Reason: "r"})
	if err != nil || !slices.Equal(got, []string{"DW-4"}) {
		t.Fatalf("the next Append = %v, %v", got, err)
	}
	ledger := string(readOrNil(t, s.path))
	if !strings.Contains(ledger, "### DW-2: Old closed item\n\nstatus: done 2026-05-25\norigin: code review of spec-1-1.md, 2026-05-20\narchived: 2026-08-24\n\n") ||
		!strings.Contains(ledger, "### DW-4: later") {
		t.Errorf("ledger after the next transaction = %q, want the stub and the new entry", ledger)
	}
	if got := string(readOrNil(t, s.archive)); got != archive {
		t.Errorf("the next transaction changed the archive: %q", got)
	}
	if left := leftovers(t, s); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
