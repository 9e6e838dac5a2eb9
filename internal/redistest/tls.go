package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// TLSFiles are PEM files for TLS tests, generated with Go's crypto (no
// openssl needed): a CA, a server certificate for 127.0.0.1, ::1 and
// localhost, a client certificate, all signed by that CA; and a second,
// unrelated CA with a server and a client certificate of its own.
type TLSFiles struct {
	Dir string

	CA, CAKey             string // the test CA
	ServerCert, ServerKey string // signed by CA, for 127.0.0.1, ::1, localhost
	ClientCert, ClientKey string // signed by CA, for client authentication

	OtherCA                         string // an unrelated CA
	OtherServerCert, OtherServerKey string // signed by OtherCA, for 127.0.0.1, ::1, localhost
	OtherClientCert, OtherClientKey string // signed by OtherCA, for client authentication
}

// GenerateTLS writes a fresh set of TLSFiles into dir (keys mode 0600).
func GenerateTLS(dir string) (*TLSFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f := &TLSFiles{Dir: dir}
	p := func(name string) string { return filepath.Join(dir, name) }

	ca, caKey, err := newCA("idmpctl test CA", p("ca.pem"), p("ca-key.pem"))
	if err != nil {
		return nil, err
	}
	f.CA, f.CAKey = p("ca.pem"), p("ca-key.pem")
	f.ServerCert, f.ServerKey = p("server.pem"), p("server-key.pem")
	if err := newLeaf(ca, caKey, "127.0.0.1", true, f.ServerCert, f.ServerKey); err != nil {
		return nil, err
	}
	f.ClientCert, f.ClientKey = p("client.pem"), p("client-key.pem")
	if err := newLeaf(ca, caKey, "idmpctl test client", false, f.ClientCert, f.ClientKey); err != nil {
		return nil, err
	}

	other, otherKey, err := newCA("unrelated test CA", p("other-ca.pem"), p("other-ca-key.pem"))
	if err != nil {
		return nil, err
	}
	f.OtherCA = p("other-ca.pem")
	f.OtherServerCert, f.OtherServerKey = p("other-server.pem"), p("other-server-key.pem")
	if err := newLeaf(other, otherKey, "127.0.0.1", true, f.OtherServerCert, f.OtherServerKey); err != nil {
		return nil, err
	}
	f.OtherClientCert, f.OtherClientKey = p("other-client.pem"), p("other-client-key.pem")
	if err := newLeaf(other, otherKey, "unrelated test client", false, f.OtherClientCert, f.OtherClientKey); err != nil {
		return nil, err
	}
	return f, nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120)) }

func newCA(name, certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"idmpctl tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, writePEM(certPath, keyPath, der, key)
}

// newLeaf signs a server certificate (for 127.0.0.1, ::1 and localhost)
// or a client certificate with the CA.
func newLeaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, server bool, certPath, keyPath string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"idmpctl tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	return writePEM(certPath, keyPath, der, key)
}

func writePEM(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}

// TLSOptions says how a TLS server presents itself and whom it lets in.
type TLSOptions struct {
	Files *TLSFiles
	// Cert and Key are the server's certificate; empty: Files.ServerCert
	// and Files.ServerKey.
	Cert, Key string
	// AuthClients is tls-auth-clients: require a client certificate signed
	// by Files.CA.
	AuthClients bool
}

// tlsConfig picks a free loopback port for TLS and returns the config
// lines that serve TLS on it (with no plain TCP port).
func (s *Server) tlsConfig(t *TLSOptions) ([]string, error) {
	cert, key := t.Cert, t.Key
	if cert == "" {
		cert, key = t.Files.ServerCert, t.Files.ServerKey
	}
	auth := "no"
	if t.AuthClients {
		auth = "yes"
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s.TLSPort = port
	s.TLSAddr = "127.0.0.1:" + strconv.Itoa(port)
	s.TLSURL = "rediss://" + s.TLSAddr + "/0"
	return []string{
		"bind 127.0.0.1",
		"tls-port " + strconv.Itoa(port),
		"tls-cert-file " + cert,
		"tls-key-file " + key,
		"tls-ca-cert-file " + t.Files.CA,
		"tls-auth-clients " + auth,
	}, nil
}
