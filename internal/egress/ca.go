// Package egress is the kit's recording, fault-ready egress proxy: every connection a replica makes to one of
// the provider's declared services (by production host and port, over HTTP/1.1 or HTTPS) reaches the service's
// stand-in (the author's fake, declarative stubs, or the built-in double) through it, so the kit records each
// request like the double's, and any other non-loopback destination is refused and reported. HTTPS is
// terminated with a certificate authority made for the run (kept in memory and in a temporary bundle file,
// never reused), which the replica trusts through one bundle file (the run's authority and the system's roots)
// named by every variable a Python client reads (see [Proxy.Env]).
package egress

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CA is a certificate authority made for one run: it signs a leaf certificate per declared host on demand.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// validity of the run's certificates: long enough for any run, short enough to be useless afterwards.
const validity = 24 * time.Hour

// NewCA makes a fresh authority with a random key.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the run's certificate authority: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "astrabox run CA", Organization: []string{"astrabox conformance kit (one run only)"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make the run's certificate authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("make the run's certificate authority: %w", err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leaves: map[string]*tls.Certificate{}}, nil
}

func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("make a certificate serial: %w", err)
	}
	return n, nil
}

// PEM is the authority's certificate, PEM-encoded.
func (ca *CA) PEM() []byte { return append([]byte(nil), ca.pem...) }

// Pool is a certificate pool holding only the authority (for Go clients in tests).
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// WriteBundle writes a CA bundle for the replica's trust variables (see [Proxy.Env]) into dir: the run's
// authority, then extra, the system's roots as [SystemRoots] reads them (so that a client verifying another
// host, with egress = "allow", still verifies it for real). The file is readable by its owner only.
func (ca *CA) WriteBundle(dir string, extra []byte) (string, error) {
	path := filepath.Join(dir, "astrabox-run-ca.pem")
	data := append(ca.PEM(), extra...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write the run's CA bundle: %w", err)
	}
	return path, nil
}

// systemRootFiles are where Linux distributions keep their bundle of trusted roots (the list Go's crypto/x509
// reads), in the order tried.
var systemRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine, macOS
}

// SystemRoots returns the system's bundle of trusted roots, PEM-encoded: the file named by the kit's own
// SSL_CERT_FILE when it holds a certificate, else the first distribution bundle that exists; nil when there is
// none (the run's bundle then trusts the run's authority only).
func SystemRoots(getenv func(string) string) []byte {
	files := systemRootFiles
	if getenv != nil {
		if f := getenv("SSL_CERT_FILE"); f != "" {
			files = append([]string{f}, files...)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) {
			continue
		}
		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		return data
	}
	return nil
}

// Leaf is the certificate the proxy presents for a host (cached per host).
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a certificate for %s: %w", host, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("make a certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	ca.leaves[host] = c
	return c, nil
}
