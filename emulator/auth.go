package emulator

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/speech-infra/speech-infra/internal/atomicfile"
)

// CredentialsFile is the file in the state directory that holds the emulator's access key (mode 0600).
const CredentialsFile = "credentials.json"

// accessKeyPrefix starts every access key id the emulator generates, so a user can tell it from an AWS key.
const accessKeyPrefix = "AKIDLOCAL"

// Credentials are the access key of one emulator state directory. The emulator generates them at its first
// start and refuses every request whose SigV4 Authorization header names another access key id. It does not
// verify signatures: the access key id is the secret that tells the user's own tools from other local
// processes, so it is random and stored readable by its owner only.
type Credentials struct {
	// AccessKeyID is the key id clients sign with.
	AccessKeyID string `json:"access_key_id"`
	// SecretAccessKey is what the SDKs sign with; the emulator does not check signatures.
	SecretAccessKey string `json:"secret_access_key"`
}

// ReadCredentials reads the access key of the emulator of stateDir, which the emulator created at its first
// start.
func ReadCredentials(stateDir string) (Credentials, error) {
	path := filepath.Join(stateDir, CredentialsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Credentials{}, fmt.Errorf("read the emulator's access key: %s does not exist: the emulator creates it at its first start (`speech-infra deploy <model> --local`): %w", path, err)
	}
	if err != nil {
		return Credentials{}, fmt.Errorf("read the emulator's access key: %w", err)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return Credentials{}, fmt.Errorf("read the emulator's access key %s: %w: stop the emulator and delete the file; the next start writes a new key", path, err)
	}
	if err := c.validate(); err != nil {
		return Credentials{}, fmt.Errorf("read the emulator's access key %s: %w: stop the emulator and delete the file; the next start writes a new key", path, err)
	}
	return c, nil
}

func (c Credentials) validate() error {
	if !strings.HasPrefix(c.AccessKeyID, accessKeyPrefix) || len(c.AccessKeyID) < len(accessKeyPrefix)+16 {
		return fmt.Errorf("access_key_id %q is not a key the emulator generated (%s followed by at least 16 random characters)", c.AccessKeyID, accessKeyPrefix)
	}
	if strings.ContainsAny(c.AccessKeyID, "/, =\"") {
		return fmt.Errorf("access_key_id %q holds a character a SigV4 credential scope cannot carry", c.AccessKeyID)
	}
	if len(c.SecretAccessKey) < 16 {
		return errors.New("secret_access_key is missing or shorter than 16 characters")
	}
	return nil
}

// loadOrCreateCredentials returns the access key of the state directory, generating it on the first start.
// The caller holds the directory's lock, so no other emulator writes the file meanwhile. The file is made
// readable by its owner only, also when an earlier version or a user left it wider.
func loadOrCreateCredentials(dir string) (Credentials, error) {
	path := filepath.Join(dir, CredentialsFile)
	if _, err := os.Stat(path); err == nil {
		if err := os.Chmod(path, 0o600); err != nil {
			return Credentials{}, fmt.Errorf("restrict %s to its owner: %w", path, err)
		}
		return ReadCredentials(dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return Credentials{}, fmt.Errorf("read the emulator's access key: %w", err)
	}
	c := Credentials{AccessKeyID: accessKeyPrefix + randomToken(16), SecretAccessKey: randomToken(32)}
	b, _ := json.MarshalIndent(c, "", "  ")
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return Credentials{}, fmt.Errorf("write the emulator's access key: %w", err)
	}
	return c, nil
}

// randomToken returns n characters of crypto-random base32 (5 bits each).
func randomToken(n int) string {
	b := make([]byte, (n*5+7)/8)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on the platforms Go supports; a key from a failed read would be guessable.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)[:n]
}

// credentialsHint is how a refused caller gets the emulator's access key. It names the commands only: an
// answer to a caller without the key says nothing about this host's paths (the emulator's log names the
// credentials file when it starts).
const credentialsHint = "`speech-infra local status` prints it; `speech-infra deploy <model> --local` writes the credentials when it starts the emulator"

// authorize checks the SigV4 Authorization header of an AWS request: it must name this emulator's access key
// id. The signature is not verified. The errors are the ones AWS lists as common to all its APIs:
// MissingAuthenticationToken and InvalidClientTokenId (HTTP 403), IncompleteSignature (HTTP 400).
func (e *Emulator) authorize(r *http.Request) *apiError {
	h := r.Header.Get("Authorization")
	if h == "" {
		return errorf("MissingAuthenticationToken", http.StatusForbidden,
			"the request must contain a valid access key id: sign it with SigV4 and the access key of this emulator (%s)", credentialsHint)
	}
	akid, ok := sigV4AccessKeyID(h)
	if !ok {
		return errorf("IncompleteSignature", http.StatusBadRequest,
			"the Authorization header is not a SigV4 signature (AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/<service>/aws4_request, SignedHeaders=..., Signature=...)")
	}
	if subtle.ConstantTimeCompare([]byte(akid), []byte(e.creds.AccessKeyID)) != 1 {
		return errorf("InvalidClientTokenId", http.StatusForbidden,
			"the access key id provided does not exist in the records of this emulator: use its access key (%s)", credentialsHint)
	}
	return nil
}

// sigV4AccessKeyID returns the access key id of a SigV4 Authorization header:
// "AWS4-HMAC-SHA256 Credential=<akid>/<date>/<region>/<service>/aws4_request, SignedHeaders=..., Signature=...".
func sigV4AccessKeyID(h string) (string, bool) {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", false
	}
	var cred string
	var signed, sig bool
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return "", false
		}
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v != ""
		case "Signature":
			sig = v != ""
		}
	}
	scope := strings.Split(cred, "/")
	if len(scope) != 5 || scope[0] == "" || scope[4] != "aws4_request" || !signed || !sig {
		return "", false
	}
	return scope[0], true
}
