// Command looprunner is examples/looprunner, the command line over
// filetxn's ledger, board and loop state, that can also keep its ledgers
// and boards on an etcd cluster, so that processes on several hosts share
// them, and copy a ledger or a board between a file and etcd.
//
//	looprunner -etcd ENDPOINTS [-etcd-prefix PREFIX] [-etcd-session-ttl DURATION] AREA COMMAND ...
//	looprunner -etcd ENDPOINTS ledger import|export [-force] FILE
//	looprunner -etcd ENDPOINTS board import|export [-force] FILE
//	looprunner etcd-demo [-procs N] [-n M] [-members K] [-kill=false] [-dir DIR]
//
// Without -etcd (or $FILETXN_ETCD_ENDPOINTS) it is examples/looprunner
// exactly. With it, every ledger and board command, and batch, runs on the
// etcd backend (package github.com/filetxn/filetxn/etcd): a -file names a
// document under the prefix, the same relative path naming the same
// document on every host, and its lock is etcd's, held by this process's
// session. The loop commands keep their loops there too, named from -root
// (a tick's harness gets no lock handed over). import and export copy a
// document byte for byte
// between its file and etcd under both locks, the file's (the sidecar that
// bmad-loop takes) and etcd's, so a project can move to etcd and back while
// bmad-loop and people still read a file. etcd-demo starts a local
// cluster, moves a project onto it and races worker processes on it while
// it kills the leader. See looprunner -h.
package main

import (
	"io"
	"os"

	"github.com/filetxn/filetxn/etcd/internal/cluster"
	"github.com/filetxn/filetxn/etcd/internal/demo"
	"github.com/filetxn/filetxn/examples/looprunner/runner"
)

func main() {
	cluster.RunMember() // in a member of the cluster etcd-demo starts, runs it and exits
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command line args with the streams given and returns the
// exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &etcdFlags{}
	return runner.Main(args, stdin, stdout, stderr, e.extension(), demo.Extension())
}
