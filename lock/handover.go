package lock

import (
	"os"
	"strings"
)

// HandoverEnv is the environment variable through which HandOver tells a child
// process which of its inherited descriptors hold which lock files, with the
// holder's pid and the nonce it wrote into its holder record. The variable
// alone grants nothing: the child checks that the descriptor it names is open
// on that very lock file and holds its lock, and that the holder record still
// carries that pid and nonce, and otherwise locks like any other process.
const HandoverEnv = "FILETXN_LOCK_HANDOVER"

// handoverFile is a descriptor duplicated for a child by HandOver on a
// borrowed handle; it is closed when the handle is released.
type handoverFile struct{ f *os.File }

func (d *handoverFile) close() { d.f.Close() }

// withEnv returns env (or this process's environment when env is nil) with
// item appended to the HandoverEnv list.
func withEnv(env []string, item string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	prev := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, HandoverEnv+"="); ok {
			prev = v
			continue
		}
		out = append(out, kv)
	}
	if prev != "" {
		item = prev + "," + item
	}
	return append(out, HandoverEnv+"="+item)
}
