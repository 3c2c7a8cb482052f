package ledger

// codec reads and writes ledger files for the filetxn engine: it satisfies
// filetxn.Codec[*Doc]. The zero value is ready to use and safe for concurrent
// use.
type codec struct{}

// Decode parses data as [Parse] does; nil data (a missing file) is an empty
// ledger. It fails only on bytes that are not valid UTF-8, and keeps nothing of
// data.
func (codec) Decode(data []byte) (*Doc, error) { return Parse(data) }

// Encode returns the ledger's bytes as [Doc.Bytes] does: the bytes decoded when
// nothing changed, so that an unchanged ledger is never rewritten.
func (codec) Encode(d *Doc) ([]byte, error) { return d.Bytes(), nil }
