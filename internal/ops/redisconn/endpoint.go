package redisconn

// Endpoint is where the connection goes, as redis-cli's prompt names it:
// the address ("127.0.0.1:6379") or, when unix is true, the socket's path;
// and the database the URL selects.
func (c *Conn) Endpoint() (addr string, unix bool, db int) {
	return c.opt.Addr, c.opt.Network == "unix", c.opt.DB
}
