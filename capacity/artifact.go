package capacity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/speech-infra/speech-infra/internal/strictjson"
)

// SchemaVersion is the schema version this package writes and the only one it reads.
const SchemaVersion = 1

// Transports the load generator can measure over; every artifact records one.
const (
	// TransportSageMakerStream is InvokeEndpointWithResponseStream against a SageMaker (or emulated) endpoint.
	TransportSageMakerStream = "sagemaker-stream"
	// TransportHTTP is a direct HTTP POST to a container.
	TransportHTTP = "http"
)

// Transports lists the known transports.
var Transports = []string{TransportSageMakerStream, TransportHTTP}

// Artifact file names inside artifacts/<model>/.
const (
	QMaxFile   = "qmax.json"
	TTotalFile = "ttotal.json"
	PlanFile   = "plan.json"
)

// ArtifactDir is the directory, relative to the repository root, that holds a model's artifacts.
func ArtifactDir(modelID string) string { return filepath.Join("artifacts", modelID) }

// DefaultQMaxPath is where tts-bench qmax writes its artifact for a model.
func DefaultQMaxPath(modelID string) string { return filepath.Join(ArtifactDir(modelID), QMaxFile) }

// DefaultTTotalPath is where tts-bench ttotal writes its artifact for a model.
func DefaultTTotalPath(modelID string) string { return filepath.Join(ArtifactDir(modelID), TTotalFile) }

// DefaultPlanPath is where tts-bench plan writes the plan and where the endpoint stack looks for it.
func DefaultPlanPath(modelID string) string { return filepath.Join(ArtifactDir(modelID), PlanFile) }

// LoadError reports every problem found while strictly decoding one artifact.
type LoadError struct {
	// Kind is the artifact kind: qmax, ttotal or plan.
	Kind string
	// Source names the file (or "input") that was decoded.
	Source string
	// Problems are the individual findings, each naming the JSON field.
	Problems []string
}

// Error lists the problems, one per line.
func (e *LoadError) Error() string {
	return fmt.Sprintf("%s is not a valid %s artifact:\n  %s", e.Source, e.Kind, strings.Join(e.Problems, "\n  "))
}

// decodeStrict decodes an artifact strictly (see strictjson): every unknown, missing or mistyped field.
func decodeStrict(data []byte, v any) []string {
	return strictjson.Decode(data, v, fmt.Sprintf("remove it or check its spelling (schema_version %d)", SchemaVersion),
		"an artifact is one object with a schema_version field")
}

// parseArtifact strictly decodes one artifact kind into v.
func parseArtifact(kind, source string, data []byte, v any) error {
	if problems := decodeStrict(data, v); len(problems) > 0 {
		return &LoadError{Kind: kind, Source: source, Problems: problems}
	}
	return nil
}

// loadArtifact reads path, strictly decodes it into v and returns the digest of the bytes it decoded, so
// that what a plan records is the digest of what it was built from, read once.
func loadArtifact(kind, path string, v any) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s artifact: %w", kind, err)
	}
	return DigestBytes(data), parseArtifact(kind, path, data, v)
}

// MarshalArtifact renders an artifact as indented JSON with a trailing newline, the form written to disk.
func MarshalArtifact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode artifact: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteJSON writes v as an artifact to path atomically (see WriteFileAtomic).
func WriteJSON(path string, v any) error {
	data, err := MarshalArtifact(v)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data)
}

// WriteFileAtomic writes data to path so that readers see either the old file or the complete new one: it
// writes a temporary file in the same directory (creating the directory), syncs it and renames it over path.
func WriteFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: create directory: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: create temporary file: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: chmod: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: rename into place: %w", path, err)
	}
	return nil
}

// DigestBytes returns "sha256:<hex>" of data.
func DigestBytes(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FileDigest returns "sha256:<hex>" of the file's contents.
func FileDigest(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("digest %s: %w", path, err)
	}
	return DigestBytes(data), nil
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether s has the form "sha256:" followed by 64 lowercase hex digits.
func ValidDigest(s string) bool { return digestPattern.MatchString(s) }

func knownTransport(t string) bool {
	for _, k := range Transports {
		if k == t {
			return true
		}
	}
	return false
}

// validFileName reports whether name is a plain file name (no directory part), as artifacts record the
// files beside them.
func validFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}
