package board

// Codec decodes and encodes boards for the filetxn engine: it has the shape of
// filetxn.Codec[*Doc]. Path is used only in error messages.
type Codec struct {
	Path string
}

// Decode parses data. A nil data is a missing board: a Doc with no rows that encodes back
// to nil, so the engine writes nothing.
func (c Codec) Decode(data []byte) (*Doc, error) { return Parse(c.Path, data) }

// Encode returns the board's current bytes: the decoded bytes unchanged when no operation
// changed anything, so decode then encode is the identity.
func (c Codec) Encode(d *Doc) ([]byte, error) { return d.Bytes(), nil }
