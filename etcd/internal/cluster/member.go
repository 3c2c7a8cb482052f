package cluster

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
)

// runMember runs the member that spec describes until it fails or its
// parent dies, and returns the process's exit status.
func runMember(spec string) int {
	var s memberSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: member spec %q: %v\n", spec, err)
		return 2
	}
	go WatchParent(s.Parent)
	wal.SegmentSizeBytes = s.SegmentSize
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = s.Name, s.Dir
	peer, err := url.Parse(s.PeerURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %s: %v\n", s.Name, err)
		return 2
	}
	client, err := url.Parse(s.ClientURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %s: %v\n", s.Name, err)
		return 2
	}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster, cfg.InitialClusterToken, cfg.ClusterState = s.InitialCluster, s.Token, s.ClusterState
	cfg.TickMs, cfg.ElectionMs = s.TickMs, s.ElectionMs
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = s.SnapshotCount, s.CatchUps
	// A member survives the crash of its process without fsync (the page
	// cache outlives the process), and the tests crash processes only; a
	// benchmark of durable writes asks for fsync.
	cfg.UnsafeNoFsync = !s.Fsync
	cfg.Logger, cfg.LogLevel, cfg.LogOutputs = "zap", "warn", []string{s.Log}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %s: start: %v\n", s.Name, err)
		return 1
	}
	err = <-e.Err()
	fmt.Fprintf(os.Stderr, "cluster: %s: %v\n", s.Name, err)
	return 1
}

// WatchParent exits the process when its parent, the process whose pid is
// parent, is gone (it has then been given to another parent): run it in a
// goroutine of a child process that must not outlive its starter.
func WatchParent(parent int) {
	for {
		if os.Getppid() != parent {
			fmt.Fprintf(os.Stderr, "cluster: parent %d gone; exiting\n", parent)
			os.Exit(3)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
