package redisconn

import (
	"context"
	"net"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// DialRaw connects to the server the URL names as the client would (its
// dialer, TLS) and returns the connection with the commands that must open
// it (AUTH, SELECT), for a caller that speaks RESP itself: idmpctl exec,
// whose replies must keep the types go-redis folds together. It talks to
// that one node, as redis-cli without -c does.
func (c *Conn) DialRaw(ctx context.Context) (net.Conn, [][]string, error) {
	opt := c.opt
	dctx, cancel := context.WithTimeout(ctx, opt.DialTimeout)
	defer cancel()
	nc, err := opt.Dialer(dctx, opt.Network, opt.Addr)
	if err != nil {
		return nil, nil, err // the dialer's error names the URL

	}
	return nc, openingCommands(opt, c.db), nil
}

// openingCommands are the commands that open a connection of ours that
// go-redis does not open (exec's, a batch's pipe): AUTH as the URL's user
// (with an empty password too: never the default user instead), SELECT
// of its database db.
func openingCommands(opt *redis.Options, db int) [][]string {
	var cmds [][]string
	switch {
	case opt.Username != "":
		cmds = append(cmds, []string{"AUTH", opt.Username, opt.Password})
	case opt.Password != "":
		cmds = append(cmds, []string{"AUTH", opt.Password})
	}
	if db != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(db)})
	}
	return cmds
}
