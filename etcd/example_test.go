package etcd_test

import (
	"context"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/etcd"
)

// A board kept in etcd, shared by every host whose Backend has the same
// prefix. (It needs a cluster at localhost:2379, so it is not run.)
func Example() {
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{"localhost:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	b, err := etcd.New(cl, "/filetxn/acme", etcd.WithSessionTTL(15*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	bs, err := board.Open("docs/sprint-status.yaml", filetxn.WithBackend(b))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	status, err := bs.Advance(ctx, "3-2-login", "review")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("3-2-login is", status)
}
