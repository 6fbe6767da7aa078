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

	"github.com/speech-infra/speech-infra/internal/atomicfile"
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

// artifact is the set of artifact types load and parse read; each names its kind (in errors) and the size
// limit of its file.
type artifact interface {
	QMax | TTotal | Plan
	kind() string
	maxBytes() int64
}

func (QMax) kind() string      { return "qmax" }
func (QMax) maxBytes() int64   { return MaxQMaxBytes }
func (TTotal) kind() string    { return "ttotal" }
func (TTotal) maxBytes() int64 { return MaxTTotalBytes }
func (Plan) kind() string      { return "plan" }
func (Plan) maxBytes() int64   { return MaxPlanBytes }

// parse strictly decodes an artifact of type T; source names it in errors. Every problem is reported at once
// as a *LoadError.
func parse[T artifact](source string, data []byte) (*T, error) {
	v := new(T)
	if problems := decodeStrict(data, v); len(problems) > 0 {
		return nil, &LoadError{Kind: (*v).kind(), Source: source, Problems: problems}
	}
	return v, nil
}

// load reads the artifact file at path (see readFile) and strictly decodes it (see parse). It also
// returns the digest of the bytes it decoded, so that what a plan records is the digest of what it was built
// from, read once.
func load[T artifact](path string) (*T, string, error) {
	data, err := readFile[T](path)
	if err != nil {
		return nil, "", err
	}
	v, err := parse[T](path, data)
	if err != nil {
		return nil, "", err
	}
	return v, DigestBytes(data), nil
}

// readFile reads an artifact file of type T: a regular file (a FIFO, a device or a directory is refused
// without blocking) no larger than T's limit.
func readFile[T artifact](path string) ([]byte, error) {
	var zero T
	data, err := strictjson.ReadFile(path, zero.maxBytes())
	if err != nil {
		return nil, fmt.Errorf("read %s artifact: %w", zero.kind(), err)
	}
	return data, nil
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

// WriteFileAtomic writes data to path so that readers see either the old file or the complete new one,
// creating path's directory first (artifacts/<model>/ may not exist yet). A new file gets mode 0644; a
// replaced one keeps its mode (see atomicfile.WriteFile).
func WriteFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: create directory: %w", path, err)
	}
	return atomicfile.WriteFile(path, data, 0o644)
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

// field is a named string field of an artifact, for checks that apply to several.
type field struct{ name, value string }

// emptyFields returns "<name>: is empty" for each field whose value is empty, in order.
func emptyFields(fields []field) []error {
	var errs []error
	for _, f := range fields {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s: is empty", f.name))
		}
	}
	return errs
}

// ArtifactsBeside loads the artifacts a measured plan names from dir (the plan's directory) and requires the
// digests the plan records.
func (p *Plan) ArtifactsBeside(dir string) (Measurement, error) {
	in := p.Inputs
	ms, err := LoadMeasurement(filepath.Join(dir, in.QMaxFile), filepath.Join(dir, in.TTotalFile))
	if err != nil {
		return ms, err
	}
	if ms.QMaxSHA256 != in.QMaxSHA256 || ms.TTotalSHA256 != in.TTotalSHA256 {
		return ms, fmt.Errorf("the artifacts beside the plan are not the ones it was derived from (digests differ): run tts-bench plan again")
	}
	return ms, nil
}
