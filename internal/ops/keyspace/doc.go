// Package keyspace reads and cleans idempotency records of any format:
// inspect of given keys, constant-memory SCAN of every primary, and purge
// with a server-side re-check (lua/purge_recheck.lua) that deletes a key
// only if it is still what was read. Decoding is internal/records' job; this
// package reads with plain commands (a read-only ACL user can inspect),
// writes only in purge, and never prints.
package keyspace
