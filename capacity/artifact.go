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

// Size limits of the artifact files. Each is far above what tts-bench writes (a plan or a ttotal artifact is
// a few KiB; a qmax artifact of MaxQMaxSteps steps stays under 1 MiB) and small enough that reading one is
// harmless: a larger file is refused with the file named and the limit stated, never read into memory.
const (
	// MaxPlanBytes bounds a plan file.
	MaxPlanBytes = 1 << 20
	// MaxTTotalBytes bounds a ttotal artifact.
	MaxTTotalBytes = 1 << 20
	// MaxQMaxBytes bounds a qmax artifact, which holds one entry per staircase step.
	MaxQMaxBytes = 4 << 20
)

// maxBytes returns the size limit of an artifact kind.
func maxBytes(kind string) int64 {
	switch kind {
	case "qmax":
		return MaxQMaxBytes
	case "ttotal":
		return MaxTTotalBytes
	}
	return MaxPlanBytes
}

// readArtifactFile reads an artifact file of the given kind: a regular file (a FIFO, a device or a directory
// is refused without blocking) no larger than the kind's limit.
func readArtifactFile(kind, path string) ([]byte, error) {
	data, err := strictjson.ReadFile(path, maxBytes(kind))
	if err != nil {
		return nil, fmt.Errorf("read %s artifact: %w", kind, err)
	}
	return data, nil
}

// loadArtifact reads path (see readArtifactFile), strictly decodes it into v and returns the digest of the
// bytes it decoded, so that what a plan records is the digest of what it was built from, read once.
func loadArtifact(kind, path string, v any) (string, error) {
	data, err := readArtifactFile(kind, path)
	if err != nil {
		return "", err
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

// FileDigest returns "sha256:<hex>" of an artifact file's contents: a regular file of at most MaxQMaxBytes,
// the largest artifact limit.
func FileDigest(path string) (string, error) {
	data, err := strictjson.ReadFile(path, MaxQMaxBytes)
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

// artifactNamePattern is what an artifact may record as the name of a file beside it: a plain file name of
// letters, digits, '.', '_' and '-', not starting with '.', at most 128 characters. No directory part, so no
// "../../etc/x" and no absolute path: the files a plan was derived from sit in the plan's own directory, and a
// name that could point anywhere else is refused rather than resolved.
var artifactNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// validFileName reports whether name is a plain file name beside the artifact (see artifactNamePattern).
func validFileName(name string) bool { return artifactNamePattern.MatchString(name) }

// fileNameRule says what validFileName accepts, for error messages.
const fileNameRule = "a plain file name beside the plan (letters, digits, '.', '_' and '-', not starting with '.', no directory part)"
