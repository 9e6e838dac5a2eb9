package redisconn

// Endpoint is where the connection goes, as redis-cli's prompt names it
// (address, or the socket's path when unix), and the URL's database.
func (c *Conn) Endpoint() (addr string, unix bool, db int) {
	return c.opt.Addr, c.opt.Network == "unix", c.opt.DB
}
