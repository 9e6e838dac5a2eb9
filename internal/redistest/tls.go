package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// TLSFiles are PEM files for TLS tests, made with Go's crypto: two
// unrelated CAs, each with a server and a client certificate it signs.
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
	mine, err := signedSet(dir, "", "idmpctl test")
	if err != nil {
		return nil, err
	}
	other, err := signedSet(dir, "other-", "unrelated test")
	if err != nil {
		return nil, err
	}
	return &TLSFiles{Dir: dir, CA: mine[0], CAKey: mine[1], ServerCert: mine[2], ServerKey: mine[3], ClientCert: mine[4], ClientKey: mine[5],
		OtherCA: other[0], OtherServerCert: other[2], OtherServerKey: other[3], OtherClientCert: other[4], OtherClientKey: other[5]}, nil
}

// signedSet writes a CA ("NAME CA"), a server certificate and a client
// certificate ("NAME client") it signs, and returns their files: CA, its
// key, server, its key, client, its key (PREFIXca.pem, PREFIXca-key.pem, ...).
func signedSet(dir, prefix, name string) (files [6]string, err error) {
	for i, n := range []string{"ca", "ca-key", "server", "server-key", "client", "client-key"} {
		files[i] = filepath.Join(dir, prefix+n+".pem")
	}
	ca, caKey, err := issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name + " CA", Organization: []string{"idmpctl tests"}},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, nil, nil, files[0], files[1])
	if err != nil {
		return files, err
	}
	_, _, err = issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1", Organization: []string{"idmpctl tests"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}, ca, caKey, files[2], files[3])
	if err != nil {
		return files, err
	}
	_, _, err = issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name + " client", Organization: []string{"idmpctl tests"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, caKey, files[4], files[5])
	return files, err
}

// issue makes a P-256 key and a certificate of tmpl for it, valid from an
// hour ago for a day, signed by parent (self-signed when nil), and writes
// both.
func issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120)); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	kder, kerr := x509.MarshalPKCS8PrivateKey(key)
	if err = errors.Join(err, kerr); err != nil {
		return nil, nil, err
	}
	return cert, key, errors.Join(
		os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644),
		os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
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
