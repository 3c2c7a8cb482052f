package filetxn

import "io/fs"

// decode decodes data, and returns the document with its encoding as
// decoded: the baseline that the encoding after a fn is compared with, to
// tell whether fn changed the document (see Codec).
func (s *Store[D]) decode(data []byte) (doc D, baseline []byte, err error) {
	if doc, err = s.decodeOnly(data); err != nil {
		return doc, nil, err
	}
	baseline, err = s.encode(doc, data)
	return doc, baseline, err
}

// decodeOnly is the codec's Decode, its error naming the file.
func (s *Store[D]) decodeOnly(data []byte) (D, error) {
	doc, err := s.codec.Decode(data)
	if err != nil {
		return doc, &fs.PathError{Op: "Decode", Path: s.path, Err: err}
	}
	return doc, nil
}

// encode is the codec's Encode of doc, or its Rewrite over read (the bytes
// doc was decoded from) for a Rewriter, its error naming the file.
func (s *Store[D]) encode(doc D, read []byte) ([]byte, error) {
	var out []byte
	var err error
	if r, ok := s.codec.(Rewriter[D]); ok {
		out, err = r.Rewrite(doc, read)
	} else {
		out, err = s.codec.Encode(doc)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "Encode", Path: s.path, Err: err}
	}
	return out, nil
}
