package redisconn

import (
	"context"
	"net"
	"strconv"
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
	var hello [][]string
	switch {
	case opt.Username != "": // an empty password too: never the default user instead
		hello = append(hello, []string{"AUTH", opt.Username, opt.Password})
	case opt.Password != "":
		hello = append(hello, []string{"AUTH", opt.Password})
	}
	if opt.DB != 0 {
		hello = append(hello, []string{"SELECT", strconv.Itoa(opt.DB)})
	}
	return nc, hello, nil
}
