//go:build unix && !linux

package lock

// linkFreeAnswers reports whether linkFree can say true here: not outside
// Linux.
func linkFreeAnswers() bool { return false }
