// Package claim is the claim protocol of docs/claim.md for idempotency keys:
// acquire, renew, complete, fail and release, each one Lua script
// (lua/claim_*.lua) decided on the server's clock, with leases, fencing
// tokens and a retention TTL. It writes only records of its own format and
// never prints; reading records of other formats is internal/ops/keyspace's and
// internal/records' job.
package claim
