package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	opsexec "github.com/idmpctl/idmpctl/internal/ops/exec"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/resp"
	"github.com/spf13/cobra"
)

// ExecOptions are exec's inputs.
type ExecOptions struct {
	Factory *Factory

	Args     []string // COMMAND [ARG...]; none: commands from stdin
	Mode     string
	Escapes  bool
	ReadOnly bool // --read-only or IDMPCTL_READ_ONLY: refuse each command that could write
}

// Validate checks flags and arguments without a server.
func (o *ExecOptions) Validate() error {
	if _, err := stream.ParseMode(o.Mode); err != nil {
		return err
	}
	if o.Escapes && len(o.Args) == 0 {
		return exit.Usagef("--escapes reads COMMAND's arguments: commands from stdin take redis-cli's quoting (\"\\xff\")")
	}
	if o.Escapes {
		for i, a := range o.Args {
			u, err := unescapeArg(a)
			if err != nil {
				return exit.Usagef("--escapes: argument %d %q: %v", i+1, a, err)
			}
			o.Args[i] = u
		}
	}
	return nil
}

// NewCmdExec builds exec; runF replaces the run step in tests.
func NewCmdExec(f *Factory, runF func(*ExecOptions) error) *cobra.Command {
	o := &ExecOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{writesAnnotation: writesPerCommand},
		Use:         "exec [COMMAND [ARG...]]",
		Short:       "Run Redis commands in Redis 8.6's syntax on any server",
		Long: `Run a Redis command, or a stream of them from stdin, with Redis 8.6's IDMP
surface on any server: natively where the server has IDMP, emulated with
idmpctl's atomic scripts elsewhere (--mode auto|native|emulated):

  XADD key [NOMKSTREAM] [KEEPREF|DELREF|ACKED] [IDMPAUTO pid | IDMP pid iid]
       [MAXLEN|MINID [=|~] threshold [LIMIT count]] * field value ...
  XCFGSET key [IDMP-DURATION seconds] [IDMP-MAXSIZE count]
  XIDMPRECORD key pid iid id
  XINFO STREAM key [FULL [COUNT n]]       (with the six IDMP fields)
  CONFIG GET|SET stream-idmp-duration, stream-idmp-maxsize
  RENAME, RENAMENX, COPY, MOVE, DEL,      (carry or drop a stream's IDMP
  UNLINK, DUMP/RESTORE                    state; RESTORE of a DUMP this
                                          session took)

Options go in any order, with Redis's errors in Redis's order. Every other
command passes to the server unchanged. Replies look as redis-cli prints
them: raw when stdout is not a terminal, redis-cli's interactive form on a
terminal (-o table forces it), -o json as redis-cli --json (maps as
objects; a string that is not UTF-8 is {"b64":"..."}).

One command: an error reply goes to stderr after "idmpctl: " (exit 65;
NOPERM 77). With no COMMAND on a terminal, exec prompts as redis-cli does
("127.0.0.1:6379> "), with line editing and history; "help" and "quit" are
the prompt's own. With no COMMAND otherwise, commands are read from stdin,
one a line, split as redis-cli splits them ("double quotes" with \xNN, \n,
\"; 'single quotes'), run in order on one connection, pipelined, one reply
each (-o json: one JSON value a line, {"error":"..."} for an error reply);
the exit status is 65 at the end if any failed. MULTI/EXEC/DISCARD/WATCH run
on the server: an emulated XADD IDMP inside MULTI is queued and runs at
EXEC, so a repeat later in the transaction dedupes.

exec talks to the server --url names, as redis-cli without -c does (in a
cluster, a key of another node is a MOVED reply). --timeout bounds the wait
for each reply: raise it for blocking commands (BLPOP, XREAD BLOCK).
--escapes reads \xNN and \\ in COMMAND's arguments (a command line cannot
carry a NUL byte).

With --read-only (or IDMPCTL_READ_ONLY) exec runs the commands the server
marks read-only (COMMAND INFO: GET, XLEN, XINFO STREAM, SCAN, EVAL_RO, ...),
those that change no data (PING, INFO, CONFIG GET, MULTI/EXEC around the
others, ...) and commands the server does not know (it refuses them), and
refuses every other before sending it (exit 64; from stdin: an error reply
in its turn, and 64 at the end; in a transaction, EXEC then aborts). The
IDMP surface is judged by what exec does: XADD, XCFGSET, CONFIG SET, RENAME,
RENAMENX, COPY and MOVE write; XINFO and CONFIG GET read.`,
		Example: `  idmpctl exec XADD orders IDMP producer-1 iid-1 '*' amount 100
  idmpctl exec XCFGSET orders IDMP-DURATION 300 IDMP-MAXSIZE 1000
  idmpctl exec -o json XINFO STREAM orders
  idmpctl exec < commands.txt
  idmpctl exec --escapes XADD s IDMP '\x00\x01' i1 '*' f v`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			o.ReadOnly = f.readOnly(c)
			return runValidated(c, o, runF, execRun, o.Validate)
		},
	}
	// Flags go before COMMAND: its arguments are Redis's (-1, --x...).
	c.Flags().SetInterspersed(false)
	addModeFlag(c, &o.Mode)
	c.Flags().BoolVar(&o.Escapes, "escapes", false, `read \xNN (any byte) and \\ in COMMAND's arguments`)
	return c
}

func execRun(ctx context.Context, o *ExecOptions) error {
	f := o.Factory
	p := f.Printer
	mode, _ := stream.ParseMode(o.Mode)
	conn, err := f.Conn(ctx)
	if err != nil {
		return err
	}
	format := p.AppendReply
	out := bufio.NewWriterSize(f.Out, 64<<10)
	var buf []byte
	failed, refused := 0, 0
	var single resp.Reply
	emit := func(r resp.Reply, more bool) {
		if r.IsError() {
			failed++
		}
		if r.IsError() && r.Int == opsexec.ReadOnlyRefused {
			refused++
		}
		if r.IsError() && r.Int == opsexec.LocalError && p.Format != render.JSON {
			buf = append(append(buf[:0], r.Str...), '\n') // redis-cli's own line
		} else {
			buf = format(buf[:0], r)
		}
		_, _ = out.Write(buf)
		if !more {
			_ = out.Flush()
		}
	}
	var prompt lineReader // a person at a terminal: redis-cli's prompt
	if len(o.Args) == 0 {
		prompt = promptLines(f)
	}
	s, err := opsexec.Open(ctx, conn, opsexec.Options{Mode: mode, RESP3: p.Format == render.JSON, Emit: emit, Timeout: conn.Timeout, ReadOnly: o.ReadOnly})
	if err != nil {
		return exit.Wrap(err, "exec")
	}
	if len(o.Args) > 0 {
		single, err = s.One(ctx, o.Args)
	} else if prompt != nil {
		err = execPrompt(ctx, f, conn, s, prompt)
	} else {
		// SIGINT and SIGTERM keep their default action, as for redis-cli:
		// a stream waiting for its next line (a terminal) ends at once.
		defer bulkGC(f.Getenv, 40<<20)()
		err = opsexec.RunLines(ctx, s, f.In)
	}
	cerr := s.Close()
	_ = out.Flush()
	if err == nil {
		err = cerr // the session's failure, which a failed command returned already
	}
	if err != nil {
		return exit.Wrap(err, "exec")
	}
	if len(o.Args) == 0 {
		switch {
		case prompt != nil: // a person saw each error reply
		case refused > 0:
			return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%d commands refused in read-only mode", refused), Silent: true}
		case failed > 0:
			return &exit.Error{Code: exit.Data, Err: fmt.Errorf("%d commands failed", failed), Silent: true}
		}
		return nil
	}
	if single.IsError() && single.Int == opsexec.ReadOnlyRefused {
		return &exit.Error{Code: exit.Usage, Err: errors.New(strings.TrimPrefix(single.Str, "ERR ")),
			Hint: "nothing was sent; drop --read-only (and IDMPCTL_READ_ONLY) to write"}
	}
	if single.IsError() {
		return replyError(single.Str)
	}
	buf = format(buf[:0], single)
	_, err = f.Out.Write(buf)
	return err
}

// replyError is an error reply of a single command: its text verbatim,
// exit 65 (the contract's classes first: NOPERM 77, LOADING 69); a
// command the server does not know is the user's, unless it is the
// scripting that exec's emulation needs (78).
func replyError(text string) error {
	code := exit.Classify(errors.New(text))
	if _, unknown := exit.Unknown(text); code == exit.Internal || unknown && !exit.ScriptingDisabled(text) {
		code = exit.Data
	}
	return &exit.Error{Code: code, Err: errors.New(strings.TrimRight(text, "\r\n"))}
}
