//go:build unix

package cluster

// Supported reports whether Start can run a cluster of processes here: on
// Unix.
const Supported = true
