package exec

import (
	"bufio"
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
	for {
		if rd.Buffered() == 0 {
			if err := s.Flush(); err != nil {
				return err
			}
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
			quit, lerr := runLine(ctx, s, line)
			if lerr != nil {
				return lerr
			}
			if quit {
				// The server closes the connection after its OK: the
				// lines after it cannot run (redis-cli stops there too).
				return nil
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

// runLine runs one line; quit reports a QUIT, which ends the stream.
func runLine(ctx context.Context, s *Session, line []byte) (quit bool, err error) {
	args, err := SplitLine(string(line))
	if err != nil {
		r := resp.ErrorOf(err.Error())
		r.Int = LocalError
		return false, s.Reply(r)
	}
	if len(args) == 0 {
		return false, nil
	}
	return len(args) == 1 && strings.EqualFold(args[0], "QUIT"), s.Do(ctx, args)
}
