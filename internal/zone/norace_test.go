//go:build !race

package zone_test

// raceDetector is true in a test binary built with -race (make race).
const raceDetector = false
