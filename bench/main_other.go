//go:build !unix

// Command peers is filetxn's peer benchmark; it needs flock(2), so it runs
// on Unix only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "peers: runs on Unix only (it compares flock-based locks)")
	os.Exit(2)
}
