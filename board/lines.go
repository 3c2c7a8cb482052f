package board

import (
	"strings"
	"unicode/utf8"
)

// line is one physical line of the board: its text and the terminator that ended it,
// kept exactly as authored.
type line struct {
	text string // without the terminator
	term string // "\n", "\r\n", "\r", "\u0085", "\u2028", "\u2029", or "" for a last line without one
	off  int    // where text starts in the source the line was cut from
}

// splitLines cuts src into lines, keeping each terminator.
//
// The breaks are exactly YAML's (and libyaml's, hence go.yaml.in/yaml/v3's): LF, CRLF, a
// lone CR, NEL (U+0085), LS (U+2028) and PS (U+2029). Using the parser's own set is what
// makes a node's Line index this slice even when an LS hides in a quoted value elsewhere.
// Python's str.splitlines, which bmad-loop uses, also breaks on \v, \f and \x1c-\x1e; the
// parser rejects those as control characters, so on every board that loads the two
// splits agree.
func splitLines(src string) []line {
	lines := make([]line, 0, strings.Count(src, "\n")+1)
	start := 0
	for i := 0; i < len(src); {
		c := src[i]
		n := 0 // length of the break at i, 0 for none
		switch {
		case c == '\n':
			n = 1
		case c == '\r':
			n = 1
			if i+1 < len(src) && src[i+1] == '\n' {
				n = 2
			}
		case c == 0xC2 && i+1 < len(src) && src[i+1] == 0x85:
			n = 2
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && (src[i+2] == 0xA8 || src[i+2] == 0xA9):
			n = 3
		}
		if n == 0 {
			i++
			continue
		}
		lines = append(lines, line{text: src[start:i], term: src[i : i+n], off: start})
		i += n
		start = i
	}
	if start < len(src) {
		lines = append(lines, line{text: src[start:], off: start})
	}
	return lines
}

// joinLines is the inverse of splitLines.
func joinLines(lines []line) []byte {
	n := 0
	for _, l := range lines {
		n += len(l.text) + len(l.term)
	}
	b := make([]byte, 0, n)
	for _, l := range lines {
		b = append(b, l.text...)
		b = append(b, l.term...)
	}
	return b
}

// byteOffset converts a 1-based column counted in characters, as the parser reports it,
// to a byte offset in text. The parser does not count a byte order mark at the start of
// the file, so on the first line skip is the BOM's length. It returns -1 when the column
// lies past the end of the line.
func byteOffset(text string, col, skip int) int {
	off := skip
	for c := 1; c < col; c++ {
		if off >= len(text) {
			return -1
		}
		_, size := utf8.DecodeRuneInString(text[off:])
		off += size
	}
	if off > len(text) {
		return -1
	}
	return off
}

// isBlank reports whether s holds only spaces and tabs (YAML's white space).
func isBlank(s string) bool {
	return strings.Trim(s, " \t") == ""
}

// commentTail reports whether rest, the text after a value, is nothing at all or blanks
// followed by a comment. bmad-loop's value pattern accepts exactly these
// (`([ \t]+#.*)?$`); trailing blanks without a comment make its line unreadable.
func commentTail(rest string) bool {
	if rest == "" {
		return true
	}
	t := strings.TrimLeft(rest, " \t")
	return len(t) < len(rest) && strings.HasPrefix(t, "#")
}

// quotedEnd returns the byte offset just past the quoted scalar that starts at text[off]
// (a ' or "), or -1 when the closing quote is not on this line.
func quotedEnd(text string, off int) int {
	q := text[off]
	for i := off + 1; i < len(text); i++ {
		switch {
		case q == '\'' && text[i] == '\'':
			if i+1 < len(text) && text[i+1] == '\'' {
				i++ // '' is an escaped quote
				continue
			}
			return i + 1
		case q == '"' && text[i] == '\\':
			i++ // skip the escaped character
		case q == '"' && text[i] == '"':
			return i + 1
		}
	}
	return -1
}
