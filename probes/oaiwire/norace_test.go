//go:build !race

package oaiwire

const raceEnabled = false
