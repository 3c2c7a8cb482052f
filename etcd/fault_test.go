//go:build unix

package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
)

// The fault tests run the stores on a real cluster, each client a process
// of its own, and crash, stop or starve what is under them. Each checks
// that nothing acknowledged is lost.

var _ = func() int {
	etcdtest.Register("fault-appender", childMain("fault-appender", appender))
	etcdtest.Register("fault-holder", childMain("fault-holder", holder))
	etcdtest.Register("fault-successor", childMain("fault-successor", successor))
	return 0
}()

// faultLedger is the ledger's path, its document's name on the backend.
const faultLedger = "fault/ledger.md"

// An appendRecord is one acknowledged append of an appender.
type appendRecord struct {
	Title    string // the entry's title, distinct across the test
	ID       string // the id Append returned; "" when a retry found it filed
	Attempts int    // the calls made, 1 unless an outcome was unknown
}

// appender appends e.count entries to the ledger, one call at a time, and
// emits a record for each once acknowledged. A call that fails has an
// unknown outcome (the commit may have been published before the reply
// was lost), so it is made again with the same spec until one succeeds.
func appender(e faultEnv) error {
	b, closeAll, err := e.backend()
	if err != nil {
		return err
	}
	defer closeAll()
	s, err := ledger.Open(faultLedger, filetxn.WithBackend(b))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(faultWait)
	for seq := range e.count {
		sp := spec(e.proc, seq)
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			ids, err := s.Append(ctx, sp)
			cancel()
			if err == nil {
				if ids[0] == "" && attempt == 1 {
					return fmt.Errorf("append %s: skipped as filed on its first try", sp.Title)
				}
				if err := emit(appendRecord{Title: sp.Title, ID: ids[0], Attempts: attempt}); err != nil {
					return err
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("append %s, try %d: %w", sp.Title, attempt, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// checkLedger fails the test unless the ledger holds every acknowledged
// append exactly once, under the id its call returned (when it returned
// one), and no two entries share an id. It returns the entries' count.
func checkLedger(t *testing.T, doc *ledger.Doc, acked [][]appendRecord) int {
	t.Helper()
	byTitle := map[string][]ledger.Entry{}
	byID := map[string]int{}
	for _, en := range doc.Entries() {
		byTitle[en.Title] = append(byTitle[en.Title], en)
		byID[en.ID]++
	}
	for id, n := range byID {
		if n > 1 {
			t.Errorf("ledger: id %s on %d entries, want 1", id, n)
		}
	}
	for _, recs := range acked {
		for _, r := range recs {
			ens := byTitle[r.Title]
			switch {
			case len(ens) != 1:
				t.Errorf("ledger: acknowledged append %s (id %q, %d tries) on %d entries, want 1", r.Title, r.ID, r.Attempts, len(ens))
			case r.ID != "" && ens[0].ID != r.ID:
				t.Errorf("ledger: acknowledged append %s has id %s, its call returned %s", r.Title, ens[0].ID, r.ID)
			}
		}
	}
	return len(doc.Entries())
}

// TestFaultLedgerAppendsSurviveLeaderKill runs 8 processes x 100 ledger
// appends through a 3-member cluster whose leader is killed (SIGKILL) and
// restarted midway: every acknowledged append is found afterwards, once,
// under the id it was given, and no id is given twice. An append whose
// call failed is retried with the same spec by its process; a retry that
// finds it filed (Append returns "") counts as acknowledged, without an id.
//
// Ablation run: a Backend whose lock key is made per process (no
// exclusion between processes) and whose Commit has no fence (no
// compares) turns it red, acknowledged appends overwritten by others.
// Each half alone leaves it green: the fence alone refuses the racing
// commits (lock.ErrLockLost, retried), and the lock alone is never lost
// here, since the sessions outlive the election.
func TestFaultLedgerAppendsSurviveLeaderKill(t *testing.T) {
	const procs, appends = 8, 100
	c := etcdtest.Start(t, 3)
	cs := startChildren(t, "fault-appender", procs, func(i int) faultEnv {
		return faultEnv{endpoints: c.Endpoints(), prefix: "fault-ledger", proc: i, count: appends, ttl: 5 * time.Second}
	})
	killLeaderMidway(t, c, cs, procs*appends/3, procs*appends/2)
	cs.wait()
	acked := records[appendRecord](t, cs)
	retried, unnumbered := 0, 0
	for i, recs := range acked {
		if len(recs) != appends {
			t.Errorf("appender %d: %d appends acknowledged, want %d", i, len(recs), appends)
		}
		for _, r := range recs {
			if r.Attempts > 1 {
				retried++
			}
			if r.ID == "" {
				unnumbered++
			}
		}
	}
	s, err := ledger.Open(faultLedger, filetxn.WithBackend(parentBackend(t, c, "fault-ledger")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	doc, err := s.View(ctx)
	if err != nil {
		t.Fatalf("View() = %v", err)
	}
	if n := checkLedger(t, doc, acked); n != procs*appends {
		t.Errorf("ledger: %d entries, want %d", n, procs*appends)
	}
	t.Logf("%d appends acknowledged, %d after a retry, %d of those found filed by the retry", procs*appends, retried, unnumbered)
}

// An ownerDoc is the document that the stopped holder and its successor
// both write.
type ownerDoc struct {
	Owner  string `json:"owner"`
	Writes int    `json:"writes"`
}

const ownerName = "fault/owner.json"

func ownerStore(b filetxn.Backend) (*filetxn.Store[*ownerDoc], error) {
	return filetxn.NewStore(ownerName, filetxn.JSON[ownerDoc](), filetxn.WithBackend(b))
}

// holder takes the owner document's lock in a Mutate, says so (a file
// "holding" in e.dir), and waits for a file "go" before its fn returns and
// the engine publishes. The test stops it in between. Its exit status is 0
// only if the publish failed with an error matching lock.ErrLockLost.
func holder(e faultEnv) error {
	b, closeAll, err := e.backend()
	if err != nil {
		return err
	}
	defer closeAll()
	s, err := ownerStore(b)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	_, err = s.Mutate(ctx, func(d *ownerDoc) error {
		d.Owner = "holder"
		d.Writes++
		return holdUntilGo(ctx, e.dir)
	})
	switch {
	case err == nil:
		return errors.New("publish after the lock was lost: succeeded, want an error matching lock.ErrLockLost")
	case !errors.Is(err, lock.ErrLockLost):
		return fmt.Errorf("publish after the lock was lost: %w, want an error matching lock.ErrLockLost", err)
	}
	fmt.Fprintf(os.Stderr, "holder: refused as it should be: %v\n", err)
	return nil
}

// holdUntilGo says that the caller holds its lock, with the file "holding"
// in dir, and waits for the test's "go" file there, or for ctx.
func holdUntilGo(ctx context.Context, dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "holding"), nil, 0o644); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// successor writes the owner document once, waiting for its lock.
func successor(e faultEnv) error {
	b, closeAll, err := e.backend()
	if err != nil {
		return err
	}
	defer closeAll()
	s, err := ownerStore(b)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	_, err = s.Mutate(ctx, func(d *ownerDoc) error {
		d.Owner = "successor"
		d.Writes++
		return nil
	})
	return err
}

// TestFaultStoppedHolderLosesItsLock stops (SIGSTOP) a process holding a
// store's lock, inside its Mutate, for longer than its session's TTL;
// another process then takes the lock and writes; the first, continued
// (SIGCONT), must have its publish refused with an error matching
// lock.ErrLockLost, and the successor's write must stand.
//
// Ablation run: Backend.Commit without its fence (no compares, no check
// of the session) turns it red: the holder's stale write lands over the
// successor's.
func TestFaultStoppedHolderLosesItsLock(t *testing.T) {
	c := etcdtest.Start(t, 3)
	dir := t.TempDir()
	env := faultEnv{endpoints: c.Endpoints(), prefix: "fault-owner", dir: dir, ttl: 2 * time.Second}
	h := startChildren(t, "fault-holder", 1, func(int) faultEnv { return env })
	waitUntil(t, "the holder to hold the lock", func() bool {
		_, err := os.Stat(filepath.Join(dir, "holding"))
		return err == nil
	})
	pid := h.cmds[0].Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Logf("holder %d stopped", pid)
	// The successor waits for the lock until the holder's lease expires.
	startChildren(t, "fault-successor", 1, func(int) faultEnv { return env }).wait()
	t.Logf("successor wrote")
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.wait()
	s, err := ownerStore(parentBackend(t, c, "fault-owner"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	d, err := s.View(ctx)
	if err != nil || d.Owner != "successor" || d.Writes != 1 {
		t.Errorf("View() = %+v, %v, want the successor's one write", d, err)
	}
}

// TestFaultFullDiskMember puts one member's data directory on a 64 KiB
// tmpfs and appends to a ledger through the cluster until that disk is
// full and on: every append either fails or is acknowledged, and the
// ledger holds every acknowledged one, once, as the other two members
// carry on. Mounting needs root; the test skips without it. The disk
// counts as full once the member has died or its tmpfs has under 4 KiB
// free; the test fails if that never happens, or if the member never dies
// of it (etcd exits on a failed write of its log or its database).
//
// A second Backend, whose client knows the full member alone, takes a
// lock and reads a document before the disk fills; once the member has
// died its Commit must fail, and the document must be absent from the
// cluster: a write that the backend did not make is never acknowledged.
//
// Ablation run: a Commit that returns nil when its transaction fails
// turns it red (the pinned Commit acknowledged, its document absent).
// The appends alone did not turn it red under it: one writer, one call
// at a time, whose Commit seldom fails (only as the member dies under it).
func TestFaultFullDiskMember(t *testing.T) {
	small := mountTmpfs(t, 64<<10)
	c := etcdtest.Start(t, 3, etcdtest.WithDataDir(2, filepath.Join(small, "m2")), etcdtest.WithWALSegment(8<<10))
	b := parentBackend(t, c, "fault-disk")
	s, err := ledger.Open(faultLedger, filetxn.WithBackend(b))
	if err != nil {
		t.Fatal(err)
	}
	const pinnedDoc = "fault/pinned.json"
	pinned, pinnedClose := pinnedBackend(t, c.Endpoints()[2], "fault-disk")
	defer pinnedClose()
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	h, err := pinned.Lock(ctx, pinnedDoc, true)
	if err != nil {
		t.Fatalf("Lock(%s) through member 2 alone: %v", pinnedDoc, err)
	}
	if data, err := h.Read(ctx, pinnedDoc); err != nil || data != nil {
		t.Fatalf("Read(%s) through member 2 alone = %q, %v, want none", pinnedDoc, data, err)
	}
	var acked []appendRecord
	failed := 0
	full := false
	// Appends until 30 are acknowledged after the disk filled and member 2
	// has died of it, or 300 tried.
	afterFull := 0
	for seq := 0; seq < 300 && (afterFull < 30 || c.Running(2)); seq++ {
		sp := spec(0, seq)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ids, err := s.Append(ctx, sp)
		cancel()
		if err != nil {
			failed++
			continue
		}
		acked = append(acked, appendRecord{Title: sp.Title, ID: ids[0], Attempts: 1})
		if full {
			afterFull++
		}
		full = full || !c.Running(2) || freeBytes(t, small) < 4<<10
	}
	if !full {
		t.Fatalf("member 2's disk never filled: %d bytes free, member running: %v", freeBytes(t, small), c.Running(2))
	}
	if afterFull < 30 {
		t.Fatalf("%d appends acknowledged after member 2's disk filled (%d failed in all), want 30: the others carry on", afterFull, failed)
	}
	if c.Running(2) {
		t.Fatalf("member 2 still running with %d bytes free on its disk, after %d appends", freeBytes(t, small), len(acked)+failed)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err = pinned.Commit(pctx, []filetxn.Held{h}, []filetxn.Put{{Name: pinnedDoc, Data: []byte(`{"by":"pinned"}`)}}, false)
	pcancel()
	if err == nil {
		t.Errorf("Commit through member 2 alone, dead of its full disk: acknowledged, want an error")
	}
	if data, gerr := b.Get(ctx, pinnedDoc); gerr != nil || data != nil {
		t.Errorf("Get(%s) after the Commit through the dead member = %q, %v, want none (the Commit returned %v)", pinnedDoc, data, gerr, err)
	}
	doc, err := s.View(ctx)
	if err != nil {
		t.Fatalf("View() = %v", err)
	}
	n := checkLedger(t, doc, [][]appendRecord{acked})
	if n < len(acked) || n > len(acked)+failed {
		t.Errorf("ledger: %d entries, want %d acknowledged and at most %d failed", n, len(acked), failed)
	}
	t.Logf("%d appends acknowledged (%d after the disk filled), %d failed; member 2 running: %v, %d bytes free on its disk",
		len(acked), afterFull, failed, c.Running(2), freeBytes(t, small))
}

// pinnedBackend returns a Backend of the test process on a client that
// knows endpoint alone, and a function that closes both: the client
// first, so that the Backend's Close, whose revoke cannot reach a dead
// member, fails at once instead of waiting out its timeout.
func pinnedBackend(t *testing.T, endpoint, prefix string) (*etcd.Backend, func()) {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := etcd.New(cl, prefix)
	if err != nil {
		cl.Close()
		t.Fatal(err)
	}
	return b, func() { cl.Close(); b.Close() }
}

// parentBackend returns a Backend of the test process itself on c.
func parentBackend(t *testing.T, c *etcdtest.Cluster, prefix string) *etcd.Backend {
	t.Helper()
	b, err := etcd.New(c.Client(t), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
