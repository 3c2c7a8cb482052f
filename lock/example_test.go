package lock_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/filetxn/filetxn/lock"
)

// Acquire waits for the lock, runs the critical section, and releases it.
// The holder record tells others who holds the lock and why.
func ExampleAcquire() {
	dir, err := os.MkdirTemp("", "lock-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state", "board.lock") // directories are created

	h, err := lock.Acquire(context.Background(), path, lock.WithPurpose("advance story 1-2"))
	if err != nil {
		log.Fatal(err)
	}
	holder, _ := lock.ReadHolder(path)
	fmt.Println("held for:", holder.Purpose, "by this process:", holder.PID == os.Getpid())
	// ... read, modify and replace the data that the lock guards ...
	if err := h.Release(); err != nil {
		log.Fatal(err)
	}
	if holder, err := lock.ReadHolder(path); holder == nil && err == nil {
		fmt.Println("no holder after release")
	}
	// Output:
	// held for: advance story 1-2 by this process: true
	// no holder after release
}

// TryAcquire never waits: while someone else holds the lock it returns
// ErrWouldBlock at once. The goroutine that holds a lock gets ErrReentrant
// instead of deadlocking on itself.
func ExampleTryAcquire() {
	dir, err := os.MkdirTemp("", "lock-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ledger.lock")

	h, err := lock.TryAcquire(path)
	if err != nil {
		log.Fatal(err)
	}
	_, err = lock.TryAcquire(path)
	fmt.Println("same goroutine:", errors.Is(err, lock.ErrReentrant))

	done := make(chan error)
	go func() {
		_, err := lock.TryAcquire(path)
		done <- err
	}()
	fmt.Println("another goroutine:", errors.Is(<-done, lock.ErrWouldBlock))

	h.Release()
	go func() {
		h, err := lock.TryAcquire(path)
		if err == nil {
			err = h.Release()
		}
		done <- err
	}()
	fmt.Println("after release:", <-done)
	// Output:
	// same goroutine: true
	// another goroutine: true
	// after release: <nil>
}

// SidecarPath names the lock file of a data file under a state root, outside
// the data's directory. Every spelling of the data file gets the same lock
// file; the name starts with 16 hex digits of a hash of the resolved path and
// ends with the data file's name, for people reading a directory listing.
func ExampleSidecarPath() {
	dir, err := os.MkdirTemp("", "lock-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "state") // in real use: a per-user state directory
	data := filepath.Join(dir, "project", "deferred-work.md")

	p1, err := lock.SidecarPath(root, data)
	if err != nil {
		log.Fatal(err)
	}
	p2, err := lock.SidecarPath(root, filepath.Join(dir, "project", "..", "project", "deferred-work.md"))
	if err != nil {
		log.Fatal(err)
	}
	rel, _ := filepath.Rel(root, p1)
	hash, name, _ := strings.Cut(filepath.Base(rel), "-")
	fmt.Println("directory:", filepath.Dir(rel))
	fmt.Println("hash digits:", len(hash))
	fmt.Println("name:", name)
	fmt.Println("same lock for both spellings:", p1 == p2)
	// Output:
	// directory: locks
	// hash digits: 16
	// name: deferred-work.md.lock
	// same lock for both spellings: true
}

// WithoutCreate suits a lock that lives in a directory which may be removed on
// purpose: an acquirer that comes late learns that the directory is gone
// instead of bringing it back.
func ExampleWithoutCreate() {
	dir, err := os.MkdirTemp("", "lock-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	job := filepath.Join(dir, "jobs", "nightly")
	os.MkdirAll(job, 0o755)
	os.WriteFile(filepath.Join(job, ".lock"), nil, 0o600)

	h, err := lock.Acquire(context.Background(), filepath.Join(job, ".lock"), lock.WithoutCreate())
	fmt.Println("before the job is removed:", err)
	h.Release()

	os.RemoveAll(job)
	_, err = lock.Acquire(context.Background(), filepath.Join(job, ".lock"), lock.WithoutCreate())
	_, statErr := os.Stat(job)
	fmt.Println("after:", errors.Is(err, fs.ErrNotExist), errors.Is(statErr, fs.ErrNotExist))
	// Output:
	// before the job is removed: <nil>
	// after: true true
}
