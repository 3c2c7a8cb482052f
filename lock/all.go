package lock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// AcquireAll acquires the locks on the files at paths, in one global order,
// and returns their handles in the order of paths. The order is by file
// identity (device and inode, after creating a missing lock file as Acquire
// does), not by spelling, so every program that takes several locks through
// AcquireAll takes any two of them in the same order, and two such programs
// cannot deadlock on each other, whatever order their paths come in.
//
// Each lock is taken as Acquire takes it, with opts, and blocks as Acquire
// does; ctx bounds every wait. If one cannot be taken, the locks already
// taken are released and the error is returned, naming that lock file:
// AcquireAll holds all of the locks or none. Two paths that name one file
// are refused at once with an error matching ErrReentrant, as asking twice
// for one lock is. Release each handle when done, in any order.
func AcquireAll(ctx context.Context, paths []string, opts ...Option) ([]*Handle, error) {
	o := collect(opts)
	type item struct {
		i  int
		id fileID
	}
	items := make([]item, len(paths))
	for i, p := range paths {
		f, err := openLockFile(p, o.NoCreate)
		if err != nil {
			return nil, pathError("Acquire", p, underlying(err))
		}
		id, err := idOfFile(f)
		f.Close()
		if err != nil {
			return nil, pathError("Acquire", p, underlying(err))
		}
		items[i] = item{i, id}
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.id.dev, b.id.dev), cmp.Compare(a.id.ino, b.id.ino), cmp.Compare(a.id.name, b.id.name))
	})
	for k := 1; k < len(items); k++ {
		if items[k].id == items[k-1].id {
			a, b := paths[items[k-1].i], paths[items[k].i]
			return nil, pathError("Acquire", b, fmt.Errorf("%w: %s and %s are one lock file", ErrReentrant, a, b))
		}
	}
	hs := make([]*Handle, len(paths))
	for _, it := range items {
		h, err := Acquire(ctx, paths[it.i], opts...)
		if err != nil {
			for _, held := range hs {
				if held != nil {
					held.Release()
				}
			}
			return nil, err
		}
		hs[it.i] = h
	}
	return hs, nil
}
