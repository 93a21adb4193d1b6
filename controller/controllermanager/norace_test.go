//go:build !race

package controllermanager_test

// raceDetector is true when the tests run with -race.
const raceDetector = false
