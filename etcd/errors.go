package etcd

import "errors"

// ErrTooLarge is returned by Commit, before anything is written, when the
// one request that would publish its documents exceeds the request limit
// (see WithMaxRequestBytes), and when the server refuses the request as too
// large or as having too many operations. The error wrapping it names the
// largest document of the commit.
var ErrTooLarge = errors.New("etcd: request too large")
