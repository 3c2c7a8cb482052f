// Package runner is the looprunner command line, importable: Main runs it,
// and an Extension adds to it what another module provides, as the etcd
// module's etcd/cmd/looprunner adds the etcd backend. The command's own
// documentation is that of examples/looprunner, a main that calls Main.
//
// # Guarantees
//
// Main is the command line of examples/looprunner exactly: the same
// commands, flags, output and exit codes. Every behaviour is a call into
// filetxn's packages; the command line only parses arguments and prints.
// Without extensions, or with ones that add nothing, nothing changes.
// With an Extension's store options every ledger and board store gets them
// after the command line's own, so a filetxn.WithBackend among them keeps
// every ledger and board, in every command and batch, on that backend.
//
// # Caveats
//
// Main keeps no state between calls but one process's lock table (that of
// the filetxn packages); its commands print to the writers given, but the
// demo starts processes of the running binary (os.Executable) and a tick
// starts its harness. The demo keeps its files on local disk whatever the
// extensions say.
package runner
