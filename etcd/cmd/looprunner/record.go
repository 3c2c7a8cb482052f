package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/filetxn/filetxn/atomicfile"
)

// A copy record says which bytes import or export last copied between a
// file and its document under one prefix: the SHA-256 of those bytes, in
// the file recordPath names under the state directory, written under the
// file's lock. A destination whose bytes are still those has not been
// changed since, so a copy may replace it without -force: the file view of
// a project on etcd is refreshed by export alone, until someone writes the
// file itself.

// recordPath returns the copy record of file under prefix, in the state
// directory root.
func recordPath(root, prefix, file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(prefix + "\x00" + abs))
	return filepath.Join(root, "etcd-copies", hex.EncodeToString(sum[:8])+"-"+filepath.Base(file)), nil
}

// readRecord returns the digest the record at path holds, "" when there
// is none.
func readRecord(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

// writeRecord replaces the record at path with digest, atomically.
func writeRecord(path, digest string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, []byte(digest+"\n"), 0o600); err != nil {
		return fmt.Errorf("copied, but the record of the copy was not saved (the next copy over it needs -force): %w", err)
	}
	return nil
}

// digest returns the SHA-256 of data in hexadecimal.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
