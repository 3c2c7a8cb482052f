package board

import (
	"regexp"
	"strconv"
)

// Status is the status of a row of development_status, as written in the board
// (trimmed). The constants below are the statuses of the order; a board may hold
// others (completed, blocked, ...), which Rank places outside it.
type Status string

// The statuses of the order, from first to last. A row only moves towards Done.
const (
	Backlog          Status = "backlog"
	ReadyForDev      Status = "ready-for-dev"
	InProgress       Status = "in-progress"
	Review           Status = "review"
	AwaitingOperator Status = "awaiting-operator"
	Done             Status = "done"
)

// drafted is the legacy name of ready-for-dev; a story row reading "drafted" reports
// ReadyForDev.
const drafted = "drafted"

var statusOrder = [...]Status{Backlog, ReadyForDev, InProgress, Review, AwaitingOperator, Done}

// Rank returns the position of status in the order (0 for backlog ... 5 for done), or -1
// for a status outside the order.
func Rank(status Status) int {
	for i, s := range statusOrder {
		if s == status {
			return i
		}
	}
	return -1
}

// allowedRegression is the one backward move AllowRegression permits.
func allowedRegression(from, to Status) bool { return from == Done && to == AwaitingOperator }

// actionable reports whether a story in this status is waiting to be picked up.
func actionable(status Status) bool { return status == Backlog || status == ReadyForDev }

type kind uint8

const (
	kindUnknown kind = iota
	kindStory
	kindEpic
	kindRetro
	kindRetroItem
)

// Key classification, in bmad-loop's order (section 4.2). \d is ASCII here, where Python's
// is any Unicode digit; no real board uses non-ASCII digits.
var (
	retroItemRE = regexp.MustCompile(`^epic-(\d+)-retro-item-(\d+)-(.+)$`)
	retroRE     = regexp.MustCompile(`^epic-(\d+)-retrospective$`)
	epicRE      = regexp.MustCompile(`^epic-(\d+)$`)
	storyRE     = regexp.MustCompile(`^(\d+)-(\d+)([a-z]?)-(.+)$`)
)

type class struct {
	kind  kind
	epic  int
	num   int
	split string
	slug  string
}

// classify sorts a development_status key. A number too large for an int makes the key
// unknown.
func classify(key string) class {
	atoi := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	if m := retroItemRE.FindStringSubmatch(key); m != nil {
		e, ok1 := atoi(m[1])
		n, ok2 := atoi(m[2])
		if ok1 && ok2 {
			return class{kind: kindRetroItem, epic: e, num: n, slug: m[3]}
		}
		return class{}
	}
	if m := retroRE.FindStringSubmatch(key); m != nil {
		if e, ok := atoi(m[1]); ok {
			return class{kind: kindRetro, epic: e}
		}
		return class{}
	}
	if m := epicRE.FindStringSubmatch(key); m != nil {
		if e, ok := atoi(m[1]); ok {
			return class{kind: kindEpic, epic: e}
		}
		return class{}
	}
	if m := storyRE.FindStringSubmatch(key); m != nil {
		e, ok1 := atoi(m[1])
		n, ok2 := atoi(m[2])
		if ok1 && ok2 {
			return class{kind: kindStory, epic: e, num: n, split: m[3], slug: m[4]}
		}
	}
	return class{}
}
