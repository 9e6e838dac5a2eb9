package claimrun

import "io"

// capWriter keeps up to max bytes (0: no cap, as for claim complete; < 0:
// none) and notes whether more came.
type capWriter struct {
	max  int
	buf  []byte
	over bool
}

func (w *capWriter) Write(b []byte) (int, error) {
	switch room := w.max - len(w.buf); {
	case w.max < 0:
	case w.max > 0 && len(b) > room:
		w.buf, w.over = append(w.buf, b[:max(room, 0)]...), true
	default:
		w.buf = append(w.buf, b...)
	}
	return len(b), nil
}

// streamWriter streams the command's stdout to out while capturing it. A
// reader that went away (a closed pipe: `claim run ... | head -1`) stops
// the streaming, never the command: the rest is still read and captured,
// and the outcome recorded. Writes never fail.
type streamWriter struct {
	out     io.Writer // nil: capture only
	capture *capWriter
	broken  error // why out stopped being written to
}

func (w *streamWriter) Write(b []byte) (int, error) {
	if w.out != nil && w.broken == nil {
		if _, err := w.out.Write(b); err != nil {
			w.broken = err
		}
	}
	return w.capture.Write(b)
}
