//go:build !linux

package staletemp

import "os"

// openDir opens dir to read its entries.
func openDir(dir string) (*os.File, error) { return os.Open(dir) }

// scan calls visit with the name of each entry of dir and whether the entry
// is a regular file.
func scan(dir string, visit func(name []byte, maybeRegular bool)) error {
	f, err := openDir(dir)
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		visit([]byte(e.Name()), e.Type().IsRegular())
	}
	return nil
}
