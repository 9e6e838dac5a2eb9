// Package view holds one view per result idmpctl prints: each knows its
// JSON value, its drawing for a person and its raw lines (render.View),
// and cmd/ prints it with Printer.Show, which alone picks the form by -o.
// A view takes what ops returned (stream, claim, keyspace, health results)
// and draws it with render; it never talks to Redis (the layer test holds
// it to no go-redis) and is not imported by ops.
package view
