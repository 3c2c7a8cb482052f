package ledger

import (
	"strings"
)

// MergeReport is the result of [Doc.Merge].
type MergeReport struct {
	// Carried are the ids of snapshot entries that were missing from the
	// ledger and were appended, in snapshot order.
	Carried []string
	// Collisions are the ids of snapshot entries whose id the ledger carries
	// with a different body. They are neither appended (that would publish a
	// duplicate id) nor overwritten.
	Collisions []string
	// Remainder is the snapshot's text outside any entry (preamble, legacy
	// sections, prose) that the ledger does not contain, one element per
	// stretch between entries, trimmed of surrounding whitespace.
	Remainder []string
}

// Merge puts back into d what snapshot, an earlier version of the same ledger,
// has and d lost (say, to a git reset), without deleting anything appended
// since. A snapshot entry is present when d has an entry with the same id and
// the same body (trailing newlines aside); an entry whose id d lacks is carried:
// appended to d as it was, with the separator rule of [Doc.Append]; an entry
// whose id d has with another body is a collision. Matching by id and body, not
// by id alone, is what keeps a lost DW-5 from being mistaken for the DW-5 a
// rival minted after the reset.
//
// An entry that would not read back as itself once appended (its fences would
// pair with text around it) is reported as a collision too.
func (d *Doc) Merge(snapshot *Doc) MergeReport {
	var rep MergeReport
	sp := snapshot.parsed()
	for i := range sp.entries {
		se := &sp.entries[i]
		body := strings.TrimRight(sp.body(se), "\n")
		p := d.parsed()
		idx, has := p.first[se.id]
		if !has {
			if d.carry(se.id, body) {
				rep.Carried = append(rep.Carried, se.id)
			} else {
				rep.Collisions = append(rep.Collisions, se.id)
			}
			continue
		}
		present := strings.TrimRight(p.body(&p.entries[idx]), "\n") == body
		for _, j := range p.dups[se.id] {
			present = present || strings.TrimRight(p.body(&p.entries[j]), "\n") == body
		}
		if !present {
			rep.Collisions = append(rep.Collisions, se.id)
		}
	}
	at := 0
	gap := func(end int) {
		if g := trimSpace(sp.text[at:end]); g != "" && !strings.Contains(d.textString(), g) {
			rep.Remainder = append(rep.Remainder, g)
		}
	}
	for i := range sp.entries {
		gap(sp.entries[i].start)
		at = sp.entries[i].end
	}
	gap(len(sp.text))
	return rep
}

// carry appends body (an entry's text without trailing newlines) and keeps it
// only if the ledger then reads as before plus exactly this entry.
func (d *Doc) carry(id, body string) bool {
	before := d.parsed()
	saved := *d
	d.appendText(separator(d.text) + body + "\n")
	after := d.parsed()
	ok := len(after.entries) == len(before.entries)+1
	for i := 0; ok && i < len(before.entries); i++ {
		b, a := &before.entries[i], &after.entries[i]
		ok = a.id == b.id && a.status == b.status && strings.TrimRight(after.body(a), "\n") == strings.TrimRight(before.body(b), "\n")
	}
	if ok {
		last := &after.entries[len(after.entries)-1]
		ok = last.id == id && strings.TrimRight(after.body(last), "\n") == body
	}
	if !ok {
		*d = saved // the room the append took stays taken: a later append moves the text
	}
	return ok
}
