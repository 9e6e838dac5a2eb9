package exec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/idmpctl/idmpctl/internal/resp"
)

// RunLines runs the commands of in, one a line, split as redis-cli splits
// them (SplitLine): a line that cannot be split is answered "Invalid
// argument(s)", an empty one skipped. Lines are sent whenever in has nothing
// more ready: a slow writer is never held back, a file goes out in large writes.
func RunLines(ctx context.Context, s *Session, in io.Reader) error {
	rd := bufio.NewReaderSize(in, 64<<10)
	var long []byte
	var words []string // the lines' words, cut from one array
	run := func(line string) (stop bool, err error) {
		if cap(words)-len(words) < 64 {
			words = make([]string, 0, 4096)
		}
		args, err := appendSplit(words[len(words):], line)
		if len(args) <= cap(words)-len(words) {
			words = words[:len(words)+len(args)]
		}
		quit, err := runLine(ctx, s, args[:len(args):len(args)], err)
		return quit || err != nil, err
	}
	for {
		if rd.Buffered() == 0 {
			if err := s.Flush(); err != nil {
				return err
			}
		}
		// The whole lines buffered, as one string: their words are its
		// substrings.
		buf, _ := rd.Peek(rd.Buffered())
		if n := bytes.LastIndexByte(buf, '\n') + 1; n > 0 {
			lines := string(buf[:n])
			_, _ = rd.Discard(n)
			for line := range strings.Lines(lines) {
				if stop, err := run(line); stop {
					return err
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			continue
		}
		line, err := rd.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = rd.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			// The server closes the connection after QUIT's OK: the lines
			// after it cannot run (redis-cli stops there too).
			if stop, lerr := run(string(line)); stop {
				return lerr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// LocalError marks (in Reply.Int) an error reply of idmpctl's ("Invalid
// argument(s)"), which redis-cli prints as a plain line.
const LocalError = -1

// runLine runs one line's words (splitErr: it could not be split); quit
// reports a QUIT, which ends the stream: with arguments too, which Redis
// (7.0, 8.6) answers OK before it closes the connection as for a bare QUIT.
func runLine(ctx context.Context, s *Session, args []string, splitErr error) (quit bool, err error) {
	if splitErr != nil {
		r := resp.ErrorOf(splitErr.Error())
		r.Int = LocalError
		return false, s.Reply(r)
	}
	if len(args) == 0 {
		return false, nil
	}
	return strings.EqualFold(args[0], "QUIT"), s.Do(ctx, args)
}
