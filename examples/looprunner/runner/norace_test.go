//go:build !race

package runner

// raceEnabled is true when the tests run with -race: the binary under test is
// then built with -race too.
const raceEnabled = false
