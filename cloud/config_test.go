package cloud

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadConfigKeepsCustomCABundle(t *testing.T) {
	// GIVEN AWS_CA_BUNDLE names a PEM file (as on machines behind a TLS-inspecting proxy)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	t.Setenv("AWS_REGION", "us-east-1")
	// WHEN the default configuration is loaded THEN it succeeds and its client owns request bodies.
	cfg, err := LoadConfig(context.Background())
	if err != nil {
		t.Fatalf("LoadConfig with AWS_CA_BUNDLE: %v", err)
	}
	if _, ok := cfg.HTTPClient.(ownBodyClient); !ok {
		t.Errorf("HTTP client = %T, want the body-owning client", cfg.HTTPClient)
	}
}
