package cmd

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// noteCLIFlags records which of redis-cli's -h, -p, -a and -n were given,
// refuses values no server has (64), and warns of -a as redis-cli does.
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

// cliURL is raw with redis-cli's flags applied: -h and -p replace its host
// and port (a unix socket's URL becomes redis://HOST:PORT), -n its
// database, -a its password (the URL's user stays).
func cliURL(raw string, g GlobalOptions) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", exit.New(exit.Config, "", "-h, -p, -a or -n with a URL that does not parse: %v", err)
	}
	unix := u.Scheme == "unix"
	if unix && (g.cliFlags["host"] || g.cliFlags["port"]) {
		// -h or -p: the user means TCP, as redis-cli without -s does.
		u, unix = &url.URL{Scheme: "redis", User: u.User}, false
	}
	if !unix {
		host, port := cmp.Or(u.Hostname(), "127.0.0.1"), cmp.Or(u.Port(), "6379")
		if g.cliFlags["host"] {
			host = g.Host
		}
		if g.cliFlags["port"] {
			port = strconv.Itoa(g.Port)
		}
		u.Host = net.JoinHostPort(host, port)
	}
	if g.cliFlags["db"] {
		q := u.Query()
		if unix {
			q.Set("db", strconv.Itoa(g.DB))
		} else {
			u.Path = fmt.Sprintf("/%d", g.DB)
			q.Del("db")
		}
		u.RawQuery = q.Encode()
	}
	if g.cliFlags["pass"] {
		u.User = url.UserPassword(u.User.Username(), g.Pass)
	}
	return u.String(), nil
}
