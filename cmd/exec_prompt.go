package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/iostreams"
	opsexec "github.com/idmpctl/idmpctl/internal/ops/exec"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/resp"
	"golang.org/x/term"
)

// exec with no COMMAND on a terminal: redis-cli's interactive prompt. Line
// editing and history come from golang.org/x/term, already a dependency,
// rather than a readline library: nothing new to vet or ship.

// lineReader reads a line after a prompt; io.EOF: the user left (Ctrl-D,
// or Ctrl-C at the prompt, as in redis-cli).
type lineReader interface {
	ReadLine(prompt string) (string, error)
}

// termLines reads lines on a real terminal with x/term's line editor. The
// terminal is raw only while a line is read: a command's reply prints as
// usual, and Ctrl-C while a command waits is SIGINT, as in redis-cli.
type termLines struct {
	fd  int
	out *os.File
	t   *term.Terminal
}

func (l *termLines) ReadLine(prompt string) (string, error) {
	old, err := term.MakeRaw(l.fd)
	if err != nil {
		return "", err
	}
	defer func() { _ = term.Restore(l.fd, old) }()
	if w, h, err := term.GetSize(l.fd); err == nil {
		_ = l.t.SetSize(w, h)
	}
	l.t.SetPrompt(prompt)
	line, err := l.t.ReadLine()
	switch {
	case errors.Is(err, term.ErrPasteIndicator):
		err = nil // a pasted line is a line
	case errors.Is(err, io.EOF):
		_, _ = l.out.WriteString("\r\n") // the shell's prompt on a line of its own
	}
	return line, err
}

// plainLines reads lines on a forced terminal, echoed as a terminal would.
type plainLines struct {
	rd  *bufio.Reader
	out io.Writer
}

func (l *plainLines) ReadLine(prompt string) (string, error) {
	fmt.Fprint(l.out, prompt)
	line, err := l.rd.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(l.out)
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	fmt.Fprintln(l.out, line)
	return line, nil
}

// promptState is what redis-cli's prompt shows.
type promptState struct {
	addr  string
	unix  bool
	db    int
	multi bool
}

func (s promptState) String() string {
	p := s.addr
	if s.unix {
		p = "redis " + s.addr
	}
	if s.db != 0 {
		p += "[" + strconv.Itoa(s.db) + "]"
	}
	if s.multi {
		p += "(TX)"
	}
	return p + "> "
}

// note follows the commands that change what the prompt shows, once the
// server accepted them (redis-cli's rules: EXEC and DISCARD end a
// transaction whatever their reply).
func (s *promptState) note(args []string, r resp.Reply) {
	name := strings.ToUpper(args[0])
	switch {
	case name == "EXEC" || name == "DISCARD":
		s.multi = false
	case r.IsError():
	case name == "MULTI":
		s.multi = true
	case name == "SELECT" && len(args) == 2 && !s.multi:
		if n, err := strconv.Atoi(args[1]); err == nil {
			s.db = n
		}
	case name == "RESET":
		s.db, s.multi = 0, false
	}
}

// execPrompt runs the prompt on session s until the user leaves (exit 0,
// as redis-cli); a lost connection ends it with its code.
func execPrompt(ctx context.Context, f *Factory, conn *redisconn.Conn, s *opsexec.Session, lines lineReader) error {
	addr, unix, db := conn.Endpoint()
	st := promptState{addr: addr, unix: unix, db: db}
	format := f.Printer.AppendReply
	var buf []byte
	for {
		line, err := lines.ReadLine(st.String())
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return exit.Wrap(err, "exec")
		}
		args, err := opsexec.SplitLine(line)
		switch {
		case err != nil:
			fmt.Fprintln(f.Out, "Invalid argument(s)") // redis-cli's own line
			continue
		case len(args) == 0:
			continue
		}
		switch strings.ToLower(args[0]) {
		case "quit", "exit": // whatever follows, as redis-cli
			return nil
		case "help":
			fmt.Fprint(f.Out, promptHelp(args[1:]))
			continue
		case "clear":
			if len(args) == 1 {
				f.Printer.ClearScreen()
				continue
			}
		}
		r, err := s.One(ctx, args)
		if err != nil {
			return exit.Wrap(err, "exec")
		}
		st.note(args, r)
		buf = format(buf[:0], r)
		if _, err := f.Out.Write(buf); err != nil {
			return err
		}
	}
}

// promptSyntax is the IDMP surface exec serves on any server, for help.
var promptSyntax = map[string]string{
	"XADD": `XADD key [NOMKSTREAM] [KEEPREF|DELREF|ACKED] [IDMPAUTO pid | IDMP pid iid]
     [MAXLEN|MINID [=|~] threshold [LIMIT count]] * field value ...
  Adds an entry; with IDMP (or IDMPAUTO), a repeat of the same pid and iid
  within the stream's IDMP-DURATION returns the first entry's ID and adds
  nothing. Native on Redis 8.6+, emulated with idmpctl's scripts elsewhere.
`,
	"XCFGSET": `XCFGSET key [IDMP-DURATION seconds] [IDMP-MAXSIZE count]
  Sets a stream's IDMP settings (how long, and how many iids per pid, it
  remembers).
`,
	"XINFO": `XINFO STREAM key [FULL [COUNT n]]
  The stream's information, with its six IDMP fields (idmp-duration,
  idmp-maxsize, pids-tracked, iids-tracked, iids-added, iids-duplicates).
`,
	"CONFIG": `CONFIG GET|SET stream-idmp-duration|stream-idmp-maxsize [value]
  The server-level defaults of new streams' IDMP settings (every other
  parameter is the server's own).
`,
}

// promptHelp is the text of help [COMMAND].
func promptHelp(args []string) string {
	if len(args) > 0 {
		name := strings.ToUpper(args[0])
		if s, ok := promptSyntax[name]; ok {
			return s
		}
		return fmt.Sprintf("%s goes to the server as it is: COMMAND DOCS %s describes it.\n", name, name)
	}
	return `idmpctl exec: Redis commands in Redis 8.6's own syntax, on any server:
  XADD key ... IDMP pid iid * field value ...   an idempotent add
  XCFGSET key IDMP-DURATION s IDMP-MAXSIZE n    a stream's IDMP settings
  XINFO STREAM key                              with its IDMP fields
  CONFIG GET|SET stream-idmp-*                  new streams' defaults
Every other command goes to the server as it is; replies as redis-cli's.
  help COMMAND   the syntax of one of those
  clear          clear the screen
  quit, exit     leave (also Ctrl-D)
`
}

// promptLines is where exec with no COMMAND reads a person's lines: the
// line editor, plain lines on a forced terminal, or nil (no terminal).
func promptLines(f *Factory) lineReader {
	ios := f.IOStreams()
	if !ios.PromptWanted() {
		return nil
	}
	in, inOK := ios.In.(*os.File)
	out, outOK := iostreams.File(ios.Out)
	if inOK && outOK && ios.RealTerminals() {
		return &termLines{fd: int(in.Fd()), out: out, t: term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{in, out}, "")}
	}
	return &plainLines{rd: bufio.NewReader(f.In), out: f.Out}
}
