//go:build !unix

package etcdtest

// supported is false where the harness has not been tried: Start and Child
// skip the test.
const supported = false
