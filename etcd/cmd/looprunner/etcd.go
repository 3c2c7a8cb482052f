package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/examples/looprunner/runner"
	"github.com/filetxn/filetxn/lock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The environment variables that give the etcd flags their defaults.
const (
	envEndpoints = "FILETXN_ETCD_ENDPOINTS"
	envPrefix    = "FILETXN_ETCD_PREFIX"
)

// defaultPrefix is the key prefix when neither -etcd-prefix nor
// $FILETXN_ETCD_PREFIX gives one.
const defaultPrefix = "filetxn"

// dialTimeout bounds the client's first connection to an endpoint.
const dialTimeout = 5 * time.Second

// etcdFlags is the extension of one command line: its global flags and,
// once a command asks, the client and backend they name.
type etcdFlags struct {
	endpoints string        // -etcd; "" means $FILETXN_ETCD_ENDPOINTS
	prefix    string        // -etcd-prefix; "" means $FILETXN_ETCD_PREFIX, else defaultPrefix
	ttl       time.Duration // -etcd-session-ttl

	client  *clientv3.Client // made by backend, closed by close
	backend *etcd.Backend
}

// etcdHelp is the paragraph looprunner -h ends with.
const etcdHelp = `On etcd: with -etcd ENDPOINTS (comma-separated client URLs; default
$FILETXN_ETCD_ENDPOINTS) every ledger and board command, and batch, keeps
its ledger or board as a document on the etcd cluster, under -etcd-prefix
(default $FILETXN_ETCD_PREFIX, else filetxn), locked by this process's
session, whose lease (-etcd-session-ttl) frees the locks of a process that
died. A -file then names a document, not a file: give the same relative path
on every host. -lock-timeout bounds the requests to the cluster too. The loop
commands keep their loops on etcd too: -root then names them; a tick's
harness gets no lock handed over there.
The demo and the lock commands work on local files, as without -etcd.
'ledger import' and 'board import' copy a file into etcd, 'ledger export'
and 'board export' a document back into its file, byte for byte, under the
file's lock and etcd's; 'loop import' and 'loop export' a loop, its state
and tick log. 'etcd-demo' shows it all on a cluster of its own.
`

// extension returns the extension that adds the etcd flags and commands.
func (e *etcdFlags) extension() runner.Extension {
	e.ttl = etcd.DefaultSessionTTL
	return runner.Extension{
		Usage:        "[-etcd ENDPOINTS] [-etcd-prefix PREFIX] [-etcd-session-ttl DURATION]",
		Help:         etcdHelp,
		Flags:        e.define,
		StoreOptions: e.storeOptions,
		Explain:      e.explain,
		Commands: map[string]map[string]runner.Command{
			"ledger": {"import": e.copyCommand(ledgerKind, false), "export": e.copyCommand(ledgerKind, true)},
			"board":  {"import": e.copyCommand(boardKind, false), "export": e.copyCommand(boardKind, true)},
			"loop":   {"import": e.loopCopyCommand(false), "export": e.loopCopyCommand(true)},
			"":       {"etcd-demo": e.demoCommand()},
		},
		Close: e.close,
	}
}

// define defines the global flags on fs, with their current values as
// defaults.
func (e *etcdFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&e.endpoints, "etcd", e.endpoints, "keep ledgers and boards on the etcd cluster at `ENDPOINTS`, comma-separated client URLs (default $"+envEndpoints+"; none: files)")
	fs.StringVar(&e.prefix, "etcd-prefix", e.prefix, "the key `PREFIX` of the project's documents and locks in etcd (default $"+envPrefix+", else "+defaultPrefix+")")
	fs.DurationVar(&e.ttl, "etcd-session-ttl", e.ttl, "the lease `DURATION` of the session that holds this process's etcd locks: the locks of a process that dies are free after it")
}

// endpointList returns the endpoints given, by -etcd or else the
// environment; none means files.
func (e *etcdFlags) endpointList() []string {
	s := e.endpoints
	if s == "" {
		s = os.Getenv(envEndpoints)
	}
	var out []string
	for _, ep := range strings.Split(s, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			out = append(out, ep)
		}
	}
	return out
}

// prefixKey returns the key prefix in use.
func (e *etcdFlags) prefixKey() string {
	switch {
	case e.prefix != "":
		return e.prefix
	case os.Getenv(envPrefix) != "":
		return os.Getenv(envPrefix)
	}
	return defaultPrefix
}

// on reports whether endpoints are given.
func (e *etcdFlags) on() bool { return len(e.endpointList()) > 0 }

// getBackend returns the backend the flags name, made on the first call;
// nil when no endpoints are given. It makes a client, which connects
// lazily: an unreachable cluster fails the first request.
func (e *etcdFlags) getBackend() (*etcd.Backend, error) {
	if e.backend != nil || !e.on() {
		return e.backend, nil
	}
	if e.ttl <= 0 {
		return nil, runner.Usagef("-etcd-session-ttl %s: want a positive duration", e.ttl)
	}
	eps := e.endpointList()
	client, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: dialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd client of %s: %w", strings.Join(eps, ","), err)
	}
	b, err := etcd.New(client, e.prefixKey(), etcd.WithSessionTTL(e.ttl))
	if err != nil {
		client.Close()
		return nil, err
	}
	e.client, e.backend = client, b
	return b, nil
}

// storeOptions keeps every ledger and board store on the backend, when
// endpoints are given.
func (e *etcdFlags) storeOptions(*runner.Cmd) ([]filetxn.Option, error) {
	b, err := e.getBackend()
	if err != nil || b == nil {
		return nil, err
	}
	return []filetxn.Option{filetxn.WithBackend(b)}, nil
}

// close ends the backend's session, which frees its locks at once, and
// closes the client.
func (e *etcdFlags) close() {
	if e.backend != nil {
		_ = e.backend.Close() // if the revoke fails, the lease expires after its TTL
	}
	if e.client != nil {
		_ = e.client.Close()
	}
}

// probeTimeout bounds explain's question to each endpoint.
const probeTimeout = 2 * time.Second

// explain says what a busy etcd lock means: a lock of the cluster's has
// no holder record, so the command line's words for it ("a holder that
// left no record, such as bmad-loop") would mislead. When no endpoint
// answers, the cluster is out of reach; else another session holds the
// lock. Both stay exit 75. A busy file lock (import and export take one,
// under the state directory) is left as it is.
func (e *etcdFlags) explain(c *runner.Cmd, err error) error {
	var busy *lock.BusyError
	switch {
	case e.client == nil:
		return err
	case errors.As(err, &busy):
	case errors.Is(err, lock.ErrWouldBlock):
		busy = &lock.BusyError{}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			busy.Path = pe.Path
		}
	default:
		return err
	}
	if root, rerr := c.StateRoot(); busy.Holder != nil || rerr == nil && strings.HasPrefix(busy.Path, filepath.Join(root, "locks")+string(filepath.Separator)) {
		return err // a file's lock: its sidecar under the state directory
	}
	eps := e.endpointList()
	var last error
	for _, ep := range eps {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		_, last = e.client.Status(ctx, ep)
		cancel()
		if last == nil {
			s := fmt.Sprintf("lock %s busy in etcd (prefix %s), held by another process's session", busy.Path, e.prefixKey())
			if busy.Waited > 0 {
				s += fmt.Sprintf("; gave up after %s", busy.Waited.Round(100*time.Millisecond))
			}
			return runner.Busyf("%s", s)
		}
	}
	return runner.Busyf("lock %s not taken: no member of the etcd cluster at %s answers (%v)", busy.Path, strings.Join(eps, ","), last)
}
