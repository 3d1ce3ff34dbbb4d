package oaiwire

// FastSlowDiff exports fastSlowDiff to the external tests (fastchat_sim_test.go
// drives the simulator, which imports this package).
var FastSlowDiff = fastSlowDiff

// ErrFastSlowDiff exports errFastSlowDiff to fasterror_sim_test.go.
var ErrFastSlowDiff = errFastSlowDiff
