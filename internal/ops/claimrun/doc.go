// Package claimrun supervises the command of `claim run` while it holds its
// claim: the guard that ties the command's life to idmpctl's (Linux), its
// own process group, forwarded signals, lease renewals, output capture, the
// stop of a command whose claim is lost, and the recording of its outcome
// with the same fencing token. It never prints: warnings come back in
// Result, failures as an *exit.Error. Flags and output are cmd/'s.
package claimrun
