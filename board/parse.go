package board

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// row is one key of development_status (or the top-level last_updated field) and, when
// it can be rewritten, the exact bytes of its value.
//
// A plain row's value sits on the key's line. A map row (a key holding a mapping with a
// scalar status key, as in "1-1-a:" then "status: done" indented under it, or
// "1-1-a: {status: done}") reads, and is edited at, the value of that status key: vline
// is then the status key's line.
type row struct {
	key string
	class
	status Status // the value as read, trimmed; drafted folded to ready-for-dev for stories
	line   int    // 0-based index of the key's line
	vline  int    // 0-based index of the line that holds the value: line, or the status key's line
	flow   bool   // the value sits inside a flow mapping ({status: done}), where ",[]{}" end it
	unread bool   // the key holds a list, or a mapping without a scalar status key: no status

	// valStart and valEnd bound the value (quotes included) in lines[vline].text. They
	// are meaningful only when refusal is "".
	valStart, valEnd int
	refusal          reason // why the row cannot be rewritten, "" when it can
	detail           string // more about refusal
}

// parser turns a board's bytes into a Doc.
type parser struct {
	raw   []byte // the bytes given to Parse, read by the YAML parser
	src   string // the same bytes, which the lines share
	lines []line
	bom   int // length of a UTF-8 byte order mark that starts the file, 0 or 3
	doc   *Doc
}

// Parse reads a sprint-status board from src without writing anything; it keeps a copy
// of src, never src itself. A nil src means the board does not exist: the Doc is empty,
// reports no rows, and encodes to nil.
//
// Parse refuses a board it does not understand with a *filetxn.FormatError whose Line is
// the offending line and whose message says which refusal it is: "not valid YAML" (not
// UTF-8, a syntax error, more than one document), "not a sprint-status board" (no
// top-level mapping, no development_status key, or one that is not a non-empty block
// mapping: null, a list, a scalar, or a flow mapping such as "{}", which a line editor
// cannot edit), or "duplicate key" (a story key twice in development_status, with Key the
// story's key, or development_status twice). A repeated epic, retrospective or other
// non-story key is tolerated: the last value wins, as in every YAML reader that accepts
// duplicates, and the row is never rewritten. The error names no file (a caller of Parse
// knows its own); a Store's is inside an *fs.PathError naming the board. Each case is in
// docs/formats/board.md.
func Parse(src []byte) (*Doc, error) {
	if src == nil {
		return &Doc{}, nil
	}
	p := &parser{raw: src, src: string(src)}
	return p.parse()
}

func (p *parser) fail(line int, kind, format string, args ...any) error {
	return formatError(line, "", kind, format, args...)
}

// yamlLineRE finds the line number in the parser's error messages ("yaml: line 3: ...").
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) parse() (*Doc, error) {
	if !utf8.ValidString(p.src) {
		i := 0
		for i < len(p.src) {
			r, size := utf8.DecodeRuneInString(p.src[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return nil, p.fail(p.lineAt(i), kindYAML, "invalid UTF-8 at byte %d", i)
	}
	if strings.HasPrefix(p.src, "\uFEFF") {
		p.bom = len("\uFEFF")
	}
	p.lines = splitLines(p.src)
	p.doc = &Doc{exists: true, src: p.src, lines: p.lines, index: map[string]int{}, epics: map[int][]int{}}

	dec := yaml.NewDecoder(bytes.NewReader(p.raw))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.fail(1, kindNotBoard, "no YAML document (the file is empty or only comments)")
		}
		return nil, p.yamlError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, p.fail(extra.Line, kindYAML, "more than one YAML document")
	case !errors.Is(err, io.EOF):
		return nil, p.yamlError(err)
	}
	top := &root
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = top.Content[0]
	}
	if top.Kind != yaml.MappingNode {
		return nil, p.fail(top.Line, kindNotBoard, "has no top-level mapping")
	}

	var ds, dsKey *yaml.Node
	var lastUpdated []*yaml.Node // key, value pairs
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		switch k.Value {
		case "development_status":
			if dsKey != nil {
				return nil, formatError(k.Line, "development_status", kindDuplicate, "repeats line %d", dsKey.Line)
			}
			dsKey, ds = k, v
		case "last_updated":
			lastUpdated = append(lastUpdated, k, v)
		}
	}
	if ds == nil {
		return nil, p.fail(top.Line, kindNotBoard, "missing development_status map")
	}
	foreign := false // rows that live in another mapping, reached through an alias
	if ds.Kind == yaml.AliasNode && ds.Alias != nil {
		ds, foreign = ds.Alias, true
	}
	switch {
	case ds.Kind == yaml.ScalarNode && ds.Tag == "!!null":
		return nil, p.fail(dsKey.Line, kindNotBoard, "development_status is empty")
	case ds.Kind != yaml.MappingNode:
		return nil, p.fail(ds.Line, kindNotBoard, "development_status is not a mapping")
	case ds.Style&yaml.FlowStyle != 0:
		return nil, p.fail(ds.Line, kindNotBoard, "development_status is a flow mapping (%s); only a block mapping can be edited line by line", firstLine(p.lineText(ds.Line)))
	}
	if err := p.mapping(ds, foreign); err != nil {
		return nil, err
	}
	if len(lastUpdated) == 2 {
		r := row{key: "last_updated", line: lastUpdated[0].Line - 1, vline: lastUpdated[0].Line - 1, status: Status(strings.TrimSpace(lastUpdated[1].Value))}
		p.locate(&r, lastUpdated[0], lastUpdated[1], false)
		if r.refusal == "" {
			p.doc.rows = append(p.doc.rows, r)
			p.doc.lu = len(p.doc.rows)
		}
	}
	return p.doc, nil
}

// mapping reads the rows of development_status. Explicit keys come first, in file order;
// keys brought in by a merge key ("<<") follow and can never be rewritten.
func (p *parser) mapping(m *yaml.Node, foreign bool) error {
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if err := p.addRow(k, v, foreign, false); err != nil {
			return err
		}
	}
	for _, v := range merges {
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		var sources []*yaml.Node
		switch v.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{v}
		case yaml.SequenceNode:
			sources = v.Content
		}
		for _, s := range sources {
			if s.Kind == yaml.AliasNode && s.Alias != nil {
				s = s.Alias
			}
			if s.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(s.Content); i += 2 {
				if err := p.addRow(s.Content[i], s.Content[i+1], true, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// addRow records one key of development_status. merged marks a key brought in by a merge
// key: an explicit key of the same name overrides it, as YAML requires.
func (p *parser) addRow(keyNode, v *yaml.Node, foreign, merged bool) error {
	k := keyNode
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return nil // a complex key has no string form; it cannot name a row
	}
	key := k.Value
	prev, seen := p.doc.index[key]
	if merged && seen {
		return nil
	}
	r := row{key: key, class: classify(key), line: keyNode.Line - 1, vline: keyNode.Line - 1}
	val := deref(v)
	// The status is the row's scalar value, or the value of the status key of the
	// mapping it holds (sk: sv, as written; n counts the status keys).
	var sk, sv *yaml.Node
	var n int
	switch val.Kind {
	case yaml.ScalarNode:
		sv = val
	case yaml.MappingNode:
		if sk, sv, n = statusField(val); sk == nil {
			r.unread, r.refusal, r.detail = true, reasonValueNotScalar, "the mapping has no status key"
		} else if d := deref(sv); d.Kind != yaml.ScalarNode {
			r.unread, r.refusal, r.detail = true, reasonValueNotScalar, fmt.Sprintf("the status key on line %d holds a %s", sk.Line, kindName(d.Kind))
		}
	default:
		r.unread, r.refusal, r.detail = true, reasonValueNotScalar, "the value is a "+kindName(val.Kind)
	}
	if !r.unread {
		if st := deref(sv); st.Tag != "!!null" {
			r.status = Status(strings.TrimSpace(st.Value))
		}
		if r.kind == kindStory && r.status == drafted {
			r.status = ReadyForDev
		}
	}
	if seen && !merged {
		pr := &p.doc.rows[prev]
		if r.kind == kindStory || pr.kind == kindStory {
			return formatError(keyNode.Line, key, kindDuplicate, "story key repeats line %d", pr.line+1)
		}
		// A row without a status keeps that reason: it is what Unread reports.
		dup := fmt.Sprintf("%s also appears on line %d; its last value wins and neither line is rewritten", key, pr.line+1)
		if !pr.unread {
			pr.refusal, pr.detail = reasonDuplicateKey, dup
		}
		if !r.unread {
			r.refusal, r.detail = reasonDuplicateKey, dup
		}
	}
	switch {
	case r.refusal != "":
	case foreign:
		r.refusal, r.detail = reasonRowNotInMapping, "the row comes from a merge key or an aliased mapping"
	case sk == nil:
		p.locate(&r, keyNode, v, false)
	case v.Kind == yaml.AliasNode:
		r.refusal, r.detail = reasonValueIsAlias, fmt.Sprintf("the value is an alias (*%s) of a mapping", v.Value)
	case val.Anchor != "":
		r.refusal, r.detail = reasonUnreadableValue, fmt.Sprintf("the mapping carries an anchor (&%s) that aliases elsewhere refer to", val.Anchor)
	case val.Style&yaml.TaggedStyle != 0:
		r.refusal, r.detail = reasonUnreadableValue, "the mapping carries an explicit tag"
	case n > 1:
		r.refusal, r.detail = reasonDuplicateKey, fmt.Sprintf("the mapping has %d status keys; the last wins and none is rewritten", n)
	default:
		r.vline, r.flow = sk.Line-1, val.Style&yaml.FlowStyle != 0
		p.locate(&r, sk, sv, r.flow)
	}
	i := len(p.doc.rows)
	p.doc.rows = append(p.doc.rows, r)
	p.doc.index[key] = i
	if !seen {
		p.doc.order = append(p.doc.order, i)
	} else {
		// A repeated key keeps its first place in file order, with its last value.
		p.doc.order[slices.Index(p.doc.order, prev)] = i
	}
	if r.kind == kindEpic && !merged {
		p.doc.epics[r.epic] = append(p.doc.epics[r.epic], i)
	}
	return nil
}

// deref returns the node an alias stands for, or n itself.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// statusField returns the status pair of a row's mapping and the number of status keys
// it has: the last, as in PyYAML, when there are several. Keys brought in by a merge key
// are not followed.
func statusField(m *yaml.Node) (k, v *yaml.Node, n int) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if c := m.Content[i]; c.Kind == yaml.ScalarNode && c.Tag != "!!merge" && c.Value == "status" {
			k, v, n = c, m.Content[i+1], n+1
		}
	}
	return k, v, n
}

// locate finds the value of the pair k: v on its line, or records why it cannot be
// rewritten. inFlow says the pair sits inside a flow mapping: the key may then follow
// "{" or "," on its line, and the value may be followed by "," or "}". It trusts the
// parser for positions and then checks them against the bytes: any disagreement refuses
// the row rather than guessing.
func (p *parser) locate(r *row, k, v *yaml.Node, inFlow bool) {
	refuse := func(reason reason, format string, args ...any) {
		r.refusal, r.detail = reason, fmt.Sprintf(format, args...)
	}
	if k.Style != 0 || k.Anchor != "" || k.Kind != yaml.ScalarNode {
		refuse(reasonKeyNotPlain, "the key is quoted, tagged or anchored")
		return
	}
	li := k.Line - 1
	if li < 0 || li >= len(p.lines) {
		refuse(reasonUnreadableValue, "the parser placed the key outside the file")
		return
	}
	text, skip := p.lines[li].text, 0
	if li == 0 {
		skip = p.bom
	}
	koff := byteOffset(text, k.Column, skip)
	if koff < 0 || !keyStart(text[skip:koff], inFlow) {
		refuse(reasonKeyNotPlain, "the key is not the first thing on its line")
		return
	}
	if !strings.HasPrefix(text[koff:], k.Value+":") {
		refuse(reasonKeyNotPlain, "the key is not written as \"key:\" on one line")
		return
	}
	colon := koff + len(k.Value)
	switch {
	case v.Kind == yaml.AliasNode:
		refuse(reasonValueIsAlias, "the value is an alias (*%s)", v.Value)
		return
	case v.Kind != yaml.ScalarNode:
		refuse(reasonValueNotScalar, "the value is a %s", kindName(v.Kind))
		return
	case v.Anchor != "":
		refuse(reasonUnreadableValue, "the value carries an anchor (&%s) that aliases elsewhere refer to", v.Anchor)
		return
	case v.Style&yaml.TaggedStyle != 0:
		refuse(reasonUnreadableValue, "the value carries an explicit tag")
		return
	case v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		refuse(reasonMultilineValue, "the value is a block scalar")
		return
	case v.Tag == "!!null" && v.Value == "":
		refuse(reasonUnreadableValue, "the value is empty")
		return
	case v.Line != k.Line:
		refuse(reasonMultilineValue, "the value starts on the line after its key")
		return
	}
	voff := byteOffset(text, v.Column, skip)
	if voff <= colon+1 || !isBlank(text[colon+1:voff]) {
		refuse(reasonUnreadableValue, "no blank between the colon and the value")
		return
	}
	var end int
	switch {
	case v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0:
		quote := byte('"')
		if v.Style&yaml.SingleQuotedStyle != 0 {
			quote = '\''
		}
		if text[voff] != quote {
			refuse(reasonUnreadableValue, "the quoted value is not where the parser put it")
			return
		}
		if end = quotedEnd(text, voff); end < 0 {
			refuse(reasonMultilineValue, "the quoted value continues on the next line")
			return
		}
		inner := text[voff+1 : end-1]
		if quote == '\'' {
			inner = strings.ReplaceAll(inner, "''", "'")
		}
		if (quote == '\'' || !strings.Contains(inner, `\`)) && inner != v.Value {
			refuse(reasonUnreadableValue, "the quoted value does not match what the parser read")
			return
		}
	default:
		if !strings.HasPrefix(text[voff:], v.Value) {
			first := strings.TrimRight(text[voff:], " \t")
			if strings.HasPrefix(v.Value, first) {
				refuse(reasonMultilineValue, "the value continues on the next line")
			} else {
				refuse(reasonUnreadableValue, "the value is not where the parser put it")
			}
			return
		}
		end = voff + len(v.Value)
	}
	if !commentTail(text[end:]) && !(inFlow && flowTail(text[end:])) {
		if isBlank(text[end:]) {
			refuse(reasonUnreadableValue, "line %d: %q: trailing blanks after the value; remove them, or start a comment after them", li+1, text)
		} else {
			refuse(reasonUnreadableValue, "line %d: %q: unexpected text after the value", li+1, text)
		}
		return
	}
	r.valStart, r.valEnd = voff, end
}

// keyStart reports whether before, the text of a line before a key, lets the key be
// rewritten: indentation only, or for a key inside a flow mapping, text ending in "{" or
// "," and blanks.
func keyStart(before string, inFlow bool) bool {
	if strings.Trim(before, " ") == "" {
		return true
	}
	t := strings.TrimRight(before, " \t")
	return inFlow && (strings.HasSuffix(t, "{") || strings.HasSuffix(t, ","))
}

// flowTail reports whether rest, the text after a value inside a flow mapping, goes on
// with the mapping: blanks, then "," or "}".
func flowTail(rest string) bool {
	t := strings.TrimLeft(rest, " \t")
	return t != "" && (t[0] == ',' || t[0] == '}')
}

// yamlError turns a parser error into a *filetxn.FormatError naming the line of the
// problem.
//
// The parser's own line numbers cannot be trusted for this: go.yaml.in/yaml/v3 reports
// the start of the enclosing construct when it has one (for a board, often the line of
// "generated:"), counts parser errors from 0 and scanner errors from 1, and omits the line
// when it is the first. So the line is found by bisection instead: the shortest prefix of
// whole lines that fails with the same message ends on the line of the problem (for an
// unclosed quote or bracket, the line where it opens). That costs O(log n) extra parses,
// on the error path only.
func (p *parser) yamlError(err error) error {
	msg := err.Error()
	fails := func(k int) bool {
		e := decodeErr(joinLines(p.lines[:k]))
		return e != nil && e.Error() == msg
	}
	lo, hi := 0, len(p.lines) // fails(lo) is false (nothing to fail on), fails(hi) is true
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		msg = m[2]
	}
	return p.fail(hi, kindYAML, "%s", strings.TrimPrefix(msg, "yaml: "))
}

// decodeErr returns the parser's error for b, reading up to two documents as parse does.
func decodeErr(b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for range 2 {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return nil
}

// lineAt returns the 1-based line of byte offset off.
func (p *parser) lineAt(off int) int {
	n := 1
	for _, l := range splitLines(p.src[:off]) {
		if l.term != "" {
			n++
		}
	}
	return n
}

func (p *parser) lineText(n int) string {
	if n < 1 || n > len(p.lines) {
		return ""
	}
	return p.lines[n-1].text
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "..."
	}
	return s
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	default:
		return "scalar"
	}
}
