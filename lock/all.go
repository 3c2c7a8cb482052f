package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/filetxn/filetxn/internal/seam"
)

// AcquireAll acquires the locks on the files at paths, in one global order,
// and returns their handles in the order of paths. The order is by file
// identity (device and inode, after creating a missing lock file as Acquire
// does), not by spelling, so two programs that take their locks through
// AcquireAll cannot deadlock on each other, whatever order their paths come in.
//
// Each lock is taken as Acquire takes it, with opts (and, after them, those
// that ForPath gives for its path), and blocks as Acquire
// does; ctx bounds every wait. If one cannot be taken, the locks already
// taken are released and the error is returned, naming that lock file:
// AcquireAll holds all of the locks or none. Two paths that name one file
// are refused at once with an error matching ErrReentrant, as asking twice
// for one lock is. Release each handle when done, in any order.
//
// A lock file deleted or replaced after the order is fixed moves in the
// order: AcquireAll never waits for a file other than the one it ordered,
// but releases what it holds and starts again in the order of the files there
// now, at the cost of an open of every path. Against a program that replaces
// the lock files over and over it starts again until ctx is done, then returns
// an error matching ctx.Err() that names the replaced lock file.
func AcquireAll(ctx context.Context, paths []string, opts ...Option) ([]*Handle, error) {
	each := make([][]Option, len(paths))
	for i, p := range paths {
		each[i] = withPath(opts, p)
	}
	for {
		order, err := orderByID(paths, each)
		if err != nil {
			return nil, err
		}
		hs, err := acquireInOrder(ctx, paths, order, each)
		var pe *fs.PathError
		if !errors.Is(err, errReordered) || !errors.As(err, &pe) {
			return hs, err
		}
		if ctx.Err() != nil {
			return nil, pathError("Acquire", pe.Path, fmt.Errorf("lock file replaced while AcquireAll took its locks: %w", ctx.Err()))
		}
	}
}

// ForPath applies opts, after the others, to the lock file at path alone
// (as spelled in AcquireAll's paths), for locks that need options of their
// own: a purpose each, or WithoutCreate for one that must not be made.
// Acquire and TryAcquire ignore it.
func ForPath(path string, opts ...Option) Option {
	return func(o *options) { o.ForPath = append(o.ForPath, pathOptions{path, opts}) }
}

// withPath returns opts followed by the options that ForPath gives among
// them for path.
func withPath(opts []Option, path string) []Option {
	o := collect(opts)
	out := slices.Clip(opts)
	for _, po := range o.ForPath {
		if po.path == path {
			out = append(out, po.opts...)
		}
	}
	return out
}

// ordered is one path of AcquireAll's, at its place in the order.
type ordered struct {
	i  int    // the path's index in paths
	id fileID // the identity the path had when the order was fixed
}

// orderByID opens (creating unless o.NoCreate) the lock file at each path and
// returns the paths sorted by the identity of those files, refusing two paths
// that name one file.
func orderByID(paths []string, each [][]Option) ([]ordered, error) {
	items := make([]ordered, len(paths))
	for i, p := range paths {
		f, err := openLockFile(p, collect(each[i]).NoCreate)
		if err != nil {
			return nil, pathError("Acquire", p, underlying(err))
		}
		id, err := idOfFile(f)
		f.Close()
		if err != nil {
			return nil, pathError("Acquire", p, underlying(err))
		}
		items[i] = ordered{i, id}
	}
	slices.SortFunc(items, func(a, b ordered) int {
		return cmp.Or(cmp.Compare(a.id.dev, b.id.dev), cmp.Compare(a.id.ino, b.id.ino), cmp.Compare(a.id.name, b.id.name))
	})
	for k := 1; k < len(items); k++ {
		if items[k].id == items[k-1].id {
			a, b := paths[items[k-1].i], paths[items[k].i]
			return nil, pathError("Acquire", b, fmt.Errorf("%w: %s and %s are one lock file", ErrReentrant, a, b))
		}
	}
	return items, nil
}

// acquireInOrder acquires the locks in order, each on the file of the
// identity it was ordered by. When the file at a path is another, it
// releases what it holds and returns an error naming that path and
// wrapping errReordered.
func acquireInOrder(ctx context.Context, paths []string, order []ordered, each [][]Option) ([]*Handle, error) {
	hs := make([]*Handle, len(paths))
	for k, it := range order {
		if k == 0 {
			_ = seam.At(seam.Ordered, paths[it.i])
		}
		_ = seam.At(seam.Acquiring, paths[it.i])
		h, err := acquireAs(ctx, paths[it.i], &it.id, true, each[it.i])
		if err != nil {
			for _, held := range hs {
				if held != nil {
					held.Release()
				}
			}
			if err == errReordered {
				err = pathError("Acquire", paths[it.i], err)
			}
			return nil, err
		}
		hs[it.i] = h
	}
	return hs, nil
}
