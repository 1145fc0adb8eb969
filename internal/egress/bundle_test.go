package egress

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEveryTrustVariableNamesTheBundle: a replica's environment names the run's bundle in every variable a
// Python client reads, AWS_CA_BUNDLE (botocore reads nothing else) and GRPC_DEFAULT_SSL_ROOTS_FILE_PATH
// included, and the harness's own variable for certifi.
func TestEveryTrustVariableNamesTheBundle(t *testing.T) {
	p, _, _ := start(t, PolicyRefuse)
	env := p.Env("/tmp/run-ca.pem")
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "AWS_CA_BUNDLE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", CABundleEnv} {
		if env[k] != "/tmp/run-ca.pem" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	if env["https_proxy"] != p.URL() {
		t.Errorf("https_proxy (read by grpc's core) = %q", env["https_proxy"])
	}
}

// TestBundleKeepsTheSystemRoots: the bundle holds the run's authority first, then the system's roots, so a
// client verifying another host (egress = "allow") still verifies it for real; SSL_CERT_FILE of the kit's
// own environment names the system roots when set.
func TestBundleKeepsTheSystemRoots(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	roots := filepath.Join(t.TempDir(), "roots.pem")
	system := []byte("-----BEGIN CERTIFICATE-----\nMIIBsystemroot\n-----END CERTIFICATE-----")
	if err := os.WriteFile(roots, system, 0o644); err != nil {
		t.Fatal(err)
	}
	got := SystemRoots(func(k string) string {
		if k == "SSL_CERT_FILE" {
			return roots
		}
		return ""
	})
	if !bytes.Equal(got, append(append([]byte(nil), system...), '\n')) {
		t.Fatalf("SystemRoots = %q", got)
	}
	path, err := ca.WriteBundle(t.TempDir(), got)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, ca.PEM()) || !bytes.Contains(data, system) {
		t.Fatalf("bundle:\n%s", data)
	}
	if SystemRoots(func(string) string { return filepath.Join(t.TempDir(), "absent.pem") }) == nil {
		if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
			t.Fatal("the distribution bundle was not found when SSL_CERT_FILE names nothing")
		}
	}
}
