package cmd

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// noteCLIFlags records which of redis-cli's -h, -p, -a and -n were given,
// and refuses values no server has (64). -a is visible to every user of
// the machine (ps, shell history): a warning says so, as redis-cli's does.
func (f *Factory) noteCLIFlags(c *cobra.Command) error {
	g := &f.Global
	g.cliFlags = map[string]bool{}
	for _, name := range []string{"host", "port", "pass", "db"} {
		if fl := c.Flags().Lookup(name); fl != nil && fl.Changed {
			g.cliFlags[name] = true
		}
	}
	switch {
	case g.cliFlags["port"] && (g.Port < 1 || g.Port > 65535):
		return exit.Usagef("-p %d: want a port from 1 to 65535", g.Port)
	case g.cliFlags["db"] && g.DB < 0:
		return exit.Usagef("-n %d: want a database number, 0 or more", g.DB)
	}
	if g.cliFlags["pass"] {
		f.Printer.Warnf("a password given with -a is visible to other users (ps, shell history); use REDISCLI_AUTH or IDMPCTL_PASSWORD")
	}
	return nil
}

// cliURL is raw (the URL of --url, the environment, or the default) with
// redis-cli's flags applied: -h and -p replace its host and port (a unix
// socket's URL becomes redis://HOST:PORT, the port 6379 unless -p), -n its
// database, -a its password (the URL's user stays).
func cliURL(raw string, g GlobalOptions) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", exit.New(exit.Config, "", "-h, -p, -a or -n with a URL that does not parse: %v", err)
	}
	if u.Scheme == "unix" {
		if !g.cliFlags["host"] && !g.cliFlags["port"] {
			if g.cliFlags["db"] {
				q := u.Query()
				q.Set("db", strconv.Itoa(g.DB))
				u.RawQuery = q.Encode()
			}
			if g.cliFlags["pass"] {
				u.User = url.UserPassword(u.User.Username(), g.Pass)
			}
			return u.String(), nil
		}
		// -h or -p: the user means TCP, as redis-cli without -s does.
		user := u.User
		u = &url.URL{Scheme: "redis", Host: "127.0.0.1:6379", User: user}
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "6379"
	}
	if g.cliFlags["host"] {
		host = g.Host
	}
	if g.cliFlags["port"] {
		port = strconv.Itoa(g.Port)
	}
	u.Host = net.JoinHostPort(host, port)
	if g.cliFlags["db"] {
		u.Path = fmt.Sprintf("/%d", g.DB)
		q := u.Query()
		q.Del("db")
		u.RawQuery = q.Encode()
	}
	if g.cliFlags["pass"] {
		u.User = url.UserPassword(u.User.Username(), g.Pass)
	}
	return u.String(), nil
}
