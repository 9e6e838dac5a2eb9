// Package claimrun supervises the command of `claim run` while it holds its
// claim: the guard that ties the command's life to idmpctl's (Linux), the
// fork/exec of the command into its own process group, the forwarding of
// SIGINT and SIGTERM to it, the renewal of the lease while it runs, the
// capture of its output, the stop of a command whose claim is lost, and the
// recording of its outcome with the same fencing token. It acts on a claimed
// process and on Redis (through internal/ops/claim) and never prints: what
// cmd/ should tell the user comes back in Result (Warnings) or as an
// *exit.Error. Acquiring the claim, flags and output are cmd/'s.
package claimrun
