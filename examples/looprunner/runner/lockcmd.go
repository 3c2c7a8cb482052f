package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
)

// engineOptions are the engine options of every ledger and board store:
// each lock the command takes has the command's name as its purpose and
// reports a wait, and with -lock-timeout 0 a busy lock is tried once
// (filetxn.WithNoWait).
func (c *cli) engineOptions() []filetxn.Option {
	opts := []filetxn.Option{filetxn.WithLockOptions(lock.WithPurpose(c.name), c.waitReport())}
	if c.lockTimeout <= 0 {
		opts = append(opts, filetxn.WithNoWait())
	}
	return opts
}

// waitReport prints, once, after a second of waiting, that the command
// waits for a lock and who holds it.
func (c *cli) waitReport() lock.Option {
	return lock.WithWaitReport(time.Second, c.sayWaiting)
}

// sayWaiting prints the wait message, once per command.
func (c *cli) sayWaiting(e *lock.BusyError) {
	c.reported.Do(func() {
		fmt.Fprintf(c.stderr, "%s: waiting for lock %s, held by %s\n", c.name, e.Path, e.Holder.String())
	})
}

// roundDuration prints d with the precision a person reads at a glance. It
// is the rounding lock.Holder.String applies to how long a holder has held
// the lock; package lock does not export it.
func roundDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// holderJSON is the output of lock holder -json: the lock file, whether it
// is held, and the holder record's fields when there is a record.
type holderJSON struct {
	Path string `json:"path"`
	Held bool   `json:"held"`
	*lock.Holder
}

// lockHolder is "lock holder PATH": who holds the lock file at PATH.
func lockHolder(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	path, err := c.parseOne(fset, args, "lock file")
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return notFoundf("no such lock file: %s", path)
	}
	h, err := lock.ReadHolder(path)
	if err != nil {
		return err
	}
	// The record says who took the lock last; whether it is held now is
	// only certain by trying. The probe writes no record and lets go at
	// once.
	var held bool
	probe, err := lock.TryAcquire(path, lock.WithoutHolder())
	switch {
	case err == nil:
		probe.Release()
		h = nil // a record left by a holder that was killed
	case errors.Is(err, lock.ErrWouldBlock):
		held = true
	default: // cannot lock here (read-only, unsupported): trust the record
		held = h != nil
	}
	if c.json {
		return c.printJSON(holderJSON{Path: path, Held: held, Holder: h})
	}
	switch {
	case held:
		c.printf("held by %s\n", h.String())
	default:
		c.printf("free\n")
	}
	return nil
}

// lockSidecar is "lock sidecar FILE": the lock file that guards FILE under
// the state directory.
func lockSidecar(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file, err := c.parseOne(fset, args, "data file")
	if err != nil {
		return err
	}
	root, err := c.stateRoot()
	if err != nil {
		return err
	}
	p, err := lock.SidecarPath(root, file)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(struct {
			File     string `json:"file"`
			StateDir string `json:"state_dir"`
			Lock     string `json:"lock"`
		}{file, root, p})
	}
	c.printf("%s\n", p)
	return nil
}
