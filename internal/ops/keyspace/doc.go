// Package keyspace reads and cleans idempotency records of any format
// (decoded by internal/records): inspect of given keys, constant-memory SCAN
// of every primary, purge with a server-side re-check, and restore. It reads
// with plain commands (a read-only ACL user can inspect) and never prints.
package keyspace
