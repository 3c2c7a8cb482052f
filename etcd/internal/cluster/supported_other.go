//go:build !unix

package cluster

// Supported is false where clusters of processes have not been tried:
// Start refuses.
const Supported = false
