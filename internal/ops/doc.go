// Package ops is where idmpctl acts: every package under internal/ops does
// what touches Redis or a claimed process, and nothing else.
//
// The layers, and the one rule between them:
//
//	cmd/                 flags, validation (pure), wiring
//	   |  calls
//	internal/ops/...     redisconn, stream, claim, claimrun, keyspace, exec,
//	   |                 health: every Redis round trip, every Lua script,
//	   |                 the claimed command's process (claimrun), the
//	   |                 lints of what inspect reads (health)
//	   |  use
//	internal/...         pure helpers both layers share: idmp, records, resp,
//	                     batch, backup, capacity, duration, bytesize, exit
//	internal/view        one view per result: its JSON, table and raw forms
//	internal/render      output (tables, styles, JSON, raw lines, Show)
//	internal/iostreams   the terminal facts (TTY, width, colour, prompts);
//	                     view, render and iostreams are used by cmd/ only
//
// A package under internal/ops never prints, never reads flags and never
// imports cmd/, internal/view, internal/render or internal/iostreams: it
// returns results and typed errors (internal/exit), and cmd/ shows them
// through a view. cmd/ never sends a
// command to Redis itself: it calls an ops package. Anything that needs
// neither Redis nor a terminal (decoding a record, the capacity arithmetic,
// the key layout of the emulated state) stays outside both, in a pure
// package with its own tests.
package ops
