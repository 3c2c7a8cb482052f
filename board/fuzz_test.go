package board

import (
	"testing"
	"unicode/utf8"
)

// fuzzSeeds are boards that exercise the editor's corners.
var fuzzSeeds = []string{
	sprint,
	"development_status:\r\n  epic-1: backlog\r\n  1-1-a: backlog  # owner: pat\r\n",
	"development_status:\n  epic-1: backlog\r  1-1-a: 'ready-for-dev'\r\n  1-2b-b: \"drafted\" # c\n  1-3-c: completed",
	"\ufeff---\nlast_updated: x # y\ndevelopment_status:\n  epic-2: backlog\n  2-1-权限门: backlog\t# 完成\n",
	"x: &a backlog\ndevelopment_status:\n  <<: {9-9-m: done}\n  1-1-a: *a\n  1-2-b: &b review\n  '1-3-c': done\n  ? 1-4-d\n  : done\n  1-5-e: |\n    done\n",
	"development_status:\n  epic-1: done\n  epic-1: backlog\n  1-1-a: in\n    progress\n  1-2-b: \"in\n    progress\"\n",
	"note: \"a\u2028b\"\ndevelopment_status:\n  1-1-a: backlog\u0085  1-2-b: done\n",
	"development_status: {}\n",
	"development_status:\n  1-1-a:\n    status: done\n",
	mapBoard,
	"development_status:\n  epic-01:\n    status: backlog\n  1-1-a: {status: 'drafted', t: \"a, b\"}  # c\n  1-2-b:\n    title: x\n  1-3-c: [done]\n",
	"development_status:\r\n  1-1-a:   # m\r\n    status: \"in progress\"  \r\n    status: done\r\n  1-2-b: &m {status: review}\r\n  1-3-c: *m\r\n",
	"development_status:\n  1-1-a: {\n    status: backlog,\n    title: x}\n  1-2-b: done   \n",
	"story_location: {project-root}/x\ndevelopment_status:\n  1-1-a: done\n",
}

// FuzzAdvance checks, for any bytes: Parse never panics; a board that loads encodes back to
// exactly its bytes; and advancing any of its rows (plain or map rows, with or without a
// status) to any status changes at most the row's value line, its epic's and
// last_updated's, and reads back as the model says.
func FuzzAdvance(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(0), uint8(2), false)
		f.Add([]byte(s), uint8(3), uint8(5), true)
	}
	f.Fuzz(func(t *testing.T, src []byte, which, target uint8, unordered bool) {
		d, err := Parse(src)
		if err != nil {
			return
		}
		if got := d.Bytes(); string(got) != string(src) {
			t.Fatalf("Parse(%q).Bytes() = %q", src, got)
		}
		rows := d.all()
		if len(rows) == 0 {
			return
		}
		r := &d.rows[rows[int(which)%len(rows)]]
		if r.key == "" || !utf8.ValidString(r.key) {
			return // not a key Advance accepts (filetxn.ErrInvalidArgument)
		}
		tgt := statusOrder[int(target)%len(statusOrder)]
		opts := []AdvanceOption{Stamp("2099-01-02 03:04")}
		if unordered {
			opts = append(opts, AllowUnordered())
		}
		fresh := d.clone()
		got, err := fresh.Advance(r.key, tgt, opts...)
		checkAdvance(t, splitLines(string(src)), d, fresh, r, tgt, unordered, got, err)
	})
}
