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
// nothing changed, so that an unchanged ledger is never rewritten. After an
// earlier Encode of the same Doc it copies only the text added since, into
// room after the bytes it returned then (see Doc.encode), so a group commit's
// batch of appends costs one copy of the ledger, not one per append.
func (codec) Encode(d *Doc) ([]byte, error) { return d.encode(), nil }
