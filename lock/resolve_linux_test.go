package lock

// linkFreeAnswers reports whether linkFree can say true here: on Linux, when
// openat2(2) is there.
func linkFreeAnswers() bool { return !noOpenat2.Load() }
