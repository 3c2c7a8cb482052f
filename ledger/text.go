package ledger

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the character classes and value hygiene that bmad-loop's
// Python defines through str.isspace, re's \s and \w, and its one_line helper.
// They are spelled out here because Go's own classes differ at the edges
// (unicode.IsSpace has no \x1c-\x1f; regexp's \s, \w and \b are ASCII-only).

// isSpace reports whether r is whitespace to Python's str.isspace, str.strip,
// str.split and re's \s: Go's unicode.IsSpace plus the separators \x1c-\x1f.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		switch r {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f:
			return true
		}
		return false
	}
	return unicode.IsSpace(r)
}

// isWord reports whether r is a word character to Python's re (\w, \b):
// a letter, a number of any kind, or the underscore.
func isWord(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// isLineBreak reports whether r is one of the characters Python's
// str.splitlines breaks on, the set bmad-loop's LINE_BREAK_RE collapses.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

func trimSpace(s string) string      { return strings.TrimFunc(s, isSpace) }
func trimRightSpace(s string) string { return strings.TrimRightFunc(s, isSpace) }

// firstField returns the first whitespace-separated token of s (Python's
// s.split()[0]), or "" when s is blank.
func firstField(s string) string {
	s = strings.TrimLeftFunc(s, isSpace)
	if i := strings.IndexFunc(s, isSpace); i >= 0 {
		return s[:i]
	}
	return s
}

// validUTF8 replaces every invalid sequence of s with U+FFFD. A UTF-8 encoded
// surrogate (ED A0-BF 80-BF), which is how a Go string carries the lone
// surrogate that bmad-loop neutralizes, becomes one U+FFFD; any other invalid
// byte becomes one U+FFFD each.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		if i+2 < len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
			n = 3
		}
		b.WriteRune(utf8.RuneError)
		i += n
	}
	return b.String()
}

// oneLine is bmad-loop's value hygiene for free text written into the
// ledger: invalid UTF-8 becomes U+FFFD; a value without any line-break
// character is returned unchanged; otherwise each run of line-break characters
// becomes one space and the result is trimmed of surrounding whitespace.
func oneLine(v string) string {
	v = validUTF8(v)
	if !strings.ContainsFunc(v, isLineBreak) {
		return v
	}
	var b strings.Builder
	b.Grow(len(v))
	inBreak := false
	for _, r := range v {
		if isLineBreak(r) {
			if !inBreak {
				b.WriteByte(' ')
			}
			inBreak = true
			continue
		}
		inBreak = false
		b.WriteRune(r)
	}
	return trimSpace(b.String())
}

// validDate reports whether s is YYYY-MM-DD with ASCII digits naming a day
// that exists (years 0001-9999, as Python's date.fromisoformat accepts).
func validDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	num := func(t string) int {
		n := 0
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, m, d := num(s[:4]), num(s[5:7]), num(s[8:])
	if y < 1 || m < 1 || m > 12 || d < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// canonicalStatus reports whether s is exactly "open" or "done YYYY-MM-DD".
func canonicalStatus(s string) bool {
	if s == "open" {
		return true
	}
	rest, ok := strings.CutPrefix(s, "done ")
	return ok && validDate(rest)
}

// severityAliases maps the lowercased severity words readers accept to the
// canonical level; the canonical levels are the values.
var severityAliases = map[string]string{
	"critical": "critical",
	"blocker":  "critical",
	"high":     "high",
	"major":    "high",
	"medium":   "medium",
	"med":      "medium",
	"moderate": "medium",
	"low":      "low",
	"minor":    "low",
	"trivial":  "low",
}

func canonicalSeverity(s string) bool {
	switch s {
	case "critical", "high", "medium", "low":
		return true
	}
	return false
}

// foldEq reports whether c matches the ASCII letter p under Python's
// re.IGNORECASE: the case pair, the Unicode simple case folds (ſ for s, K for
// k), and the dotted and dotless i that Python's equivalence table adds.
func foldEq(c rune, p byte) bool {
	if p < 'a' || p > 'z' {
		return c == rune(p)
	}
	if c < utf8.RuneSelf {
		return c|0x20 == rune(p)
	}
	switch {
	case p == 's':
		return c == 0x17F
	case p == 'k':
		return c == 0x212A
	case p == 'i':
		return c == 0x130 || c == 0x131
	}
	return false
}

// hasFoldPrefix reports whether s starts with word (lowercase ASCII letters)
// under foldEq, and returns the length in bytes of the matched prefix.
func hasFoldPrefix(s, word string) (int, bool) {
	i := 0
	for j := 0; j < len(word); j++ {
		if i >= len(s) {
			return 0, false
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !foldEq(r, word[j]) {
			return 0, false
		}
		i += n
	}
	return i, true
}

// pyLower lowercases s the way Python's str.lower does for the characters
// that matter to the severity aliases: U+0130 becomes "i̇" (two code points),
// not Go's "i".
func pyLower(s string) string {
	if strings.ContainsRune(s, 0x130) {
		s = strings.ReplaceAll(s, "\u0130", "i\u0307")
	}
	return strings.ToLower(s)
}

// skipBlanks returns the index of the first byte of s at or after i that is
// not a space or a tab.
func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// severityKey matches the start of a severity field line, in any of the
// shapes bmad-loop's SEVERITY_FIELD_RE accepts: optional indent, an optional
// "-" or "*" bullet, optional "**", then "severity" or "priority" in any case,
// optional blanks and a colon. It returns the index just past the colon.
func severityKey(line string) (int, bool) {
	i := skipBlanks(line, 0)
	if i < len(line) && (line[i] == '-' || line[i] == '*') {
		if j := skipBlanks(line, i+1); j > i+1 {
			i = j
		}
	}
	if strings.HasPrefix(line[i:], "**") {
		i += 2
	}
	n, ok := hasFoldPrefix(line[i:], "severity")
	if !ok {
		n, ok = hasFoldPrefix(line[i:], "priority")
	}
	if !ok {
		return 0, false
	}
	i = skipBlanks(line, i+n)
	if i >= len(line) || line[i] != ':' {
		return 0, false
	}
	return i + 1, true
}

// lineSeverity returns the normalized severity a severity field line declares,
// and whether the line is a severity field line at all (SEVERITY_FIELD_RE
// matched). A field line whose word is not an alias declares "".
func lineSeverity(line string) (sev string, matched bool) {
	i, ok := severityKey(line)
	if !ok {
		return "", false
	}
	i = skipBlanks(line, i)
	if strings.HasPrefix(line[i:], "**") {
		i += 2
	}
	i = skipBlanks(line, i)
	r, n := utf8.DecodeRuneInString(line[i:])
	if !(r < utf8.RuneSelf && (r|0x20 >= 'a' && r|0x20 <= 'z')) && r != 0x130 && r != 0x131 && r != 0x17F && r != 0x212A {
		return "", false
	}
	j := i + n
	for j < len(line) {
		r, n := utf8.DecodeRuneInString(line[j:])
		if r != '-' && !isWord(r) {
			break
		}
		j += n
	}
	return severityAliases[pyLower(line[i:j])], true
}
