// Package models is the model catalog: one JSON file per model in this directory, embedded into every binary
// and loaded, validated and looked up here. A model entry says where the weights come from (repository and
// pinned revision), which engine serves them, on what instance type, the latency SLO, the queue shield depth,
// the fleet bounds and the planning defaults.
package models

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/internal/editdistance"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/internal/strictjson"
)

//go:embed *.json
var embedded embed.FS

// Engines lists the TTS engines the inference container implements.
var Engines = []string{"kokoro", "espeak", "calibration"}

// DefaultModel is the model the CDK app and the CLIs use when none is named.
const DefaultModel = "kokoro-82m"

// LocalInstanceType is the instance type recorded for runs on the local emulator.
const LocalInstanceType = "local"

// Model is one catalog entry.
type Model struct {
	// ID names the model everywhere: stack names, endpoint name (speech-<id>), artifact directory.
	ID string `json:"id"`
	// Description is one line for humans.
	Description string `json:"description,omitempty"`
	// Engine is the container engine that serves the model (see Engines).
	Engine string `json:"engine"`
	// Source is where the weights come from; nil for engines without weights (espeak).
	Source *Source `json:"source,omitempty"`
	// InstanceType is the SageMaker instance type, e.g. ml.g5.xlarge.
	InstanceType string `json:"instance_type"`
	// Prices is the on-demand price of one instance-hour for real-time inference per instance type, each with
	// its source and date: InstanceType must have one; the other types are those tts-bench
	// compare may measure. ResolvePrice picks the price a command uses.
	Prices map[string]Price `json:"prices"`
	// InitialInstanceCount is the endpoint's instance count at creation.
	InitialInstanceCount int `json:"initial_instance_count"`
	// SLO is the latency objective that qmax measures against.
	SLO SLO `json:"slo"`
	// QueueMaxDepth is the container's shield depth once a plan passes the gate.
	QueueMaxDepth int `json:"queue_max_depth"`
	// Scaling holds the fleet bounds and whether autoscaling is wanted.
	Scaling Scaling `json:"scaling"`
	// Planning holds the defaults of tts-bench plan.
	Planning Planning `json:"planning"`
	// Container holds SageMaker timeouts for the container.
	Container Container `json:"container"`
	// Twin, for the calibration engine only, makes the model a twin of a measured instance: per-segment
	// compute as a wait on Workers slots, so that on the local emulator two instances serve twice as much, as
	// on AWS (docs/design.md, "The local emulator").
	Twin *Twin `json:"twin,omitempty"`

	file string
	// origin is the catalog file as a user finds it (CatalogPath).
	origin string
	// endpoint, when set (WithEndpoint), replaces speech-<id> as the endpoint's name: tts-bench compare
	// measures one endpoint per instance type (docs/design.md, "Instance types side by side").
	endpoint string
}

// Source pins the Hugging Face files of a model.
type Source struct {
	// Repo is the Hugging Face repository, owner/name.
	Repo string `json:"repo"`
	// Revision is the full 40-hex commit the files are pinned at.
	Revision string `json:"revision"`
	// Files are the paths synced into the weights bucket, each a path.Match pattern against the whole path
	// in the repository (`*` stays within one directory: voices/*.bin). Every pattern must select at least
	// one file of the pinned revision, or the sync fails.
	Files []string `json:"files"`
	// TokenSecret names the AWS Secrets Manager secret whose string value is a Hugging Face access token,
	// for a gated or private repository. It is optional, and only because a public repository needs no
	// token: without it no Authorization header is sent, and a repository that turns out to be gated fails
	// the sync with 401 and this field named as the fix (never a silent success).
	TokenSecret string `json:"token_secret,omitempty"`
}

// SLO is a latency objective on time to first audio byte.
type SLO struct {
	// TTFABMs is the bound on the percentile of time to first audio byte, in milliseconds.
	TTFABMs int `json:"ttfab_ms"`
	// Percentile is the percentile the bound applies to (95 for p95).
	Percentile int `json:"percentile"`
	// StallBudgetMs bounds the p95 playback stall of a passing qmax step, in milliseconds, before the load
	// engine's jitter allowance (bench.DefaultStallJitter). Required: 0 means no audible gap is allowed, and
	// a file without the field is refused (strictjson), never read as 0.
	StallBudgetMs int `json:"stall_budget_ms"`
}

// FirstAudioTargetDivisor is the fraction of the TTFAB SLO the container's deadline scheduler aims a new
// request's first audio at (FIRST_AUDIO_TARGET_MS = ttfab_ms / 3). A third leaves the other two thirds of
// the SLO for what the target does not see: the segment's own compute, a burst of arrivals with the same
// deadline, and the network between the container and the client.
const FirstAudioTargetDivisor = 3

// FirstAudioTargetMs is the container's FIRST_AUDIO_TARGET_MS for this SLO: TTFABMs / FirstAudioTargetDivisor,
// at least 1.
func (s SLO) FirstAudioTargetMs() int { return max(s.TTFABMs/FirstAudioTargetDivisor, 1) }

// StallBudget is StallBudgetMs as a duration.
func (s SLO) StallBudget() time.Duration { return time.Duration(s.StallBudgetMs) * time.Millisecond }

// Scaling holds fleet bounds.
type Scaling struct {
	// Autoscaling says whether the endpoint stack should create scaling once a plan passes the gate.
	Autoscaling bool `json:"autoscaling"`
	// MinInstances is the smallest fleet.
	MinInstances int `json:"min_instances"`
	// MaxInstances is the largest fleet.
	MaxInstances int `json:"max_instances"`
}

// Planning holds the defaults for tts-bench plan.
type Planning struct {
	// SurgeRatio is the factor by which load may grow within one T_plan, in [1, MaxSurgeRatio] (ValidSurgeRatio).
	SurgeRatio float64 `json:"surge_ratio"`
	// DetectionBufferS is the time from a surge until a scale-out is asked for, in seconds.
	DetectionBufferS float64 `json:"detection_buffer_s"`
}

// Twin is the calibration engine's stand-in for a measured instance.
type Twin struct {
	// Of is the catalog id of the model this is a twin of.
	Of string `json:"of"`
	// SegmentMs is the compute per segment, in milliseconds (CALIBRATION_SEGMENT_MS).
	SegmentMs int `json:"segment_ms"`
	// Workers is the number of synthesis slots (ENGINE_WORKERS).
	Workers int `json:"workers"`
	// Basis says where SegmentMs and Workers come from (a measurement, a published figure).
	Basis string `json:"basis"`
}

// Container holds SageMaker container timeouts.
type Container struct {
	// StartupHealthCheckTimeoutS bounds the time until /ping answers 200 on a new instance.
	StartupHealthCheckTimeoutS int `json:"startup_health_check_timeout_s"`
	// ModelDownloadTimeoutS bounds the time to download the model data to a new instance.
	ModelDownloadTimeoutS int `json:"model_download_timeout_s"`
	// InvocationTimeoutS is the longest one invocation may take (SageMaker allows at most 3600 s for streaming).
	InvocationTimeoutS int `json:"invocation_timeout_s"`
}

// File is the catalog file the model was loaded from.
func (m Model) File() string { return m.file }

// CatalogPath is the catalog file as a user finds it: models/<id>.json for the catalog built into the binary,
// <dir>/<id>.json for a --catalog or SPEECH_CATALOG directory, the bare file name when loaded otherwise (Load).
func (m Model) CatalogPath() string {
	if m.origin != "" {
		return m.origin
	}
	return m.file
}

// EndpointName is the SageMaker endpoint name of the model.
func (m Model) EndpointName() string {
	if m.endpoint != "" {
		return m.endpoint
	}
	return "speech-" + m.ID
}

// WithEndpoint returns the model deployed and measured under the endpoint name instead of speech-<id>.
func (m Model) WithEndpoint(name string) Model {
	m.endpoint = name
	return m
}

// VariantName is the production variant every endpoint uses.
const VariantName = "AllTraffic"

// Revision is the pinned weights revision, or "none" for engines without weights.
func (m Model) Revision() string {
	if m.Source == nil {
		return "none"
	}
	return m.Source.Revision
}

// WeightsPrefix is the uncompressed S3 prefix (without bucket) that holds the model's files.
func (m Model) WeightsPrefix() string { return "models/" + m.ID + "/" + m.Revision() + "/" }

// ContainerEnvironment is the inference container's environment for this model: the engine, the model id,
// the model directory (engines with weights only), the invocation timeout (SAGEMAKER_MODEL_SERVER_TIMEOUT, the
// catalog's invocation_timeout_s, which the local emulator enforces), the deadline scheduler's first-audio
// target (FIRST_AUDIO_TARGET_MS, a third of the SLO: SLO.FirstAudioTargetMs) and the queue shield depth, 0
// meaning unbounded, the measurement configuration every endpoint runs in until a plan passes the gate. The
// endpoint stack and the local deploy both build the environment here.
func (m Model) ContainerEnvironment(modelDir string, queueMaxDepth int) map[string]string {
	env := map[string]string{
		"ENGINE":                         m.Engine,
		"MODEL_ID":                       m.ID,
		"QUEUE_MAX_DEPTH":                strconv.Itoa(queueMaxDepth),
		"FIRST_AUDIO_TARGET_MS":          strconv.Itoa(m.SLO.FirstAudioTargetMs()),
		"SAGEMAKER_MODEL_SERVER_TIMEOUT": strconv.Itoa(m.Container.InvocationTimeoutS),
	}
	if m.Source != nil {
		env["MODEL_DIR"] = modelDir
	}
	if t := m.Twin; t != nil {
		env["CALIBRATION_SEGMENT_MS"] = strconv.Itoa(t.SegmentMs)
		env["ENGINE_WORKERS"] = strconv.Itoa(t.Workers)
		// One segment per sentence: the twin's service time is per request, as measured.
		env["FIRST_SEGMENT_RUNES"] = "0"
	}
	return env
}

// MaxFileBytes bounds one catalog file (a few KiB in practice): a larger file, or anything but a regular file
// (a FIFO, a device, a directory named *.json), is refused with the file named rather than read.
const MaxFileBytes = 1 << 20

// Bounds of catalog values beyond the rules SageMaker sets: generous for any real deployment, and small enough
// that the plan arithmetic built on them stays exact.
const (
	// MaxQueueDepth is the largest queue_max_depth.
	MaxQueueDepth = 100_000
	// MaxInstances is the largest scaling.max_instances (and initial_instance_count).
	MaxInstances = 100_000
	// MaxSurgeRatio is the largest surge ratio s, the catalog's planning.surge_ratio and a plan's: the plan's
	// thresholds are rates (safe_rps ÷ s), which need no bound; this one refuses nonsense. Traffic that jumps by
	// more within T_plan is a case for a fixed fleet, which tts-bench plan's search names.
	MaxSurgeRatio = 10
	// MaxDetectionBufferS is the largest planning.detection_buffer_s.
	MaxDetectionBufferS = 3600
	// MaxSLOMs is the largest slo.ttfab_ms (an hour).
	MaxSLOMs = 3_600_000
	// MaxPricePerHourUSD is the largest price of one instance-hour (prices[...].usd_per_hour, --price-per-hour).
	MaxPricePerHourUSD = 1000
)

// Catalog is a validated set of models keyed by id.
type Catalog struct {
	models map[string]Model
}

// IDs returns the model ids in order.
func (c Catalog) IDs() []string {
	ids := make([]string, 0, len(c.models))
	for id := range c.models {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// With returns a copy of the catalog in which m replaces the model of its id.
func (c Catalog) With(m Model) Catalog {
	out := Catalog{models: make(map[string]Model, len(c.models)+1)}
	for id, v := range c.models {
		out.models[id] = v
	}
	out.models[m.ID] = m
	return out
}

// Get returns the model with the given id, or an error naming the nearest known id when one is close
// (nearest) and listing the known ones.
func (c Catalog) Get(id string) (Model, error) {
	m, ok := c.models[id]
	if !ok {
		hint := ""
		if near, ok := nearest(id, c.IDs()); ok {
			hint = "did you mean " + near + "? "
		}
		return Model{}, fmt.Errorf("unknown model %q: %sthe catalog has %s", id, hint, strings.Join(c.IDs(), ", "))
	}
	return m, nil
}

// nearest is the one of ids nearest to name, a mistyped id, and whether it is near enough to suggest: within
// three single-character edits (Levenshtein distance, letter case ignored), or an id that starts with name.
// The first of ids wins a tie.
func nearest(name string, ids []string) (string, bool) {
	typed := strings.ToLower(name)
	best, bestD := "", -1
	for _, id := range ids {
		if d := editdistance.Levenshtein(typed, strings.ToLower(id)); bestD < 0 || d < bestD {
			best, bestD = id, d
		}
	}
	if best == "" {
		return "", false
	}
	return best, bestD <= 3 || len(typed) >= 3 && strings.HasPrefix(strings.ToLower(best), typed)
}

// CatalogEnv names the environment variable that replaces the catalog built into the binary with a directory
// of catalog files, as the commands' --catalog DIR does: an edit to models/*.json then
// counts without a rebuild.
const CatalogEnv = "SPEECH_CATALOG"

// dirOverride is the directory --catalog gave for the running command (UseDir); it wins over CatalogEnv.
var dirOverride string

// UseDir makes Default load the catalog files in dir ("" goes back to CatalogEnv, else the built-in catalog).
// The commands call it for --catalog before they run and reset it after.
func UseDir(dir string) { dirOverride = dir }

// Dir is the catalog directory in effect: --catalog's (UseDir), else $SPEECH_CATALOG, else "" (built in).
func Dir() string {
	if dirOverride != "" {
		return dirOverride
	}
	return os.Getenv(CatalogEnv)
}

// CatalogSource says in words which catalog Default loads.
func CatalogSource() string {
	if d := Dir(); d != "" {
		return fmt.Sprintf("the catalog files in %s (--catalog or %s)", d, CatalogEnv)
	}
	return "the catalog built into this binary (models/*.json when it was built; --catalog DIR or " + CatalogEnv + " reads a directory instead)"
}

// Default loads the catalog in effect: the directory of --catalog or $SPEECH_CATALOG when set (Dir), else the
// catalog embedded in the binary.
func Default() (Catalog, error) {
	d := Dir()
	if d == "" {
		return load(embedded, func(name string) string { return "models/" + name })
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return Catalog{}, exitcode.Usagef("model catalog %s (--catalog or %s): not a readable directory: give a directory of <model-id>.json files, such as the repository's models/", d, CatalogEnv)
	}
	cat, err := load(os.DirFS(d), func(name string) string { return filepath.Join(d, name) })
	if err != nil {
		return Catalog{}, exitcode.Usagef("model catalog %s (--catalog or %s): %w", d, CatalogEnv, err)
	}
	return cat, nil
}

// ValidationError lists every problem found in the catalog.
type ValidationError struct {
	// Problems are the individual findings, each naming file, field and fix.
	Problems []string
}

func (e *ValidationError) Error() string {
	return "invalid model catalog:\n  " + strings.Join(e.Problems, "\n  ")
}

// Load reads every *.json file at the root of fsys as a model and validates them all. It returns a
// *ValidationError with every problem at once when any file is invalid.
func Load(fsys fs.FS) (Catalog, error) { return load(fsys, nil) }

// load is Load, each model's CatalogPath given by origin (nil: the file name).
func load(fsys fs.FS, origin func(name string) string) (Catalog, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return Catalog{}, fmt.Errorf("list catalog files: %w", err)
	}
	if len(names) == 0 {
		return Catalog{}, errors.New("model catalog is empty: add one <model-id>.json file per model")
	}
	cat := Catalog{models: map[string]Model{}}
	var problems []string
	for _, name := range names {
		data, err := strictjson.ReadFileFS(fsys, name, MaxFileBytes)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: cannot read: %v", name, err))
			continue
		}
		m, probs := Parse(name, data)
		problems = append(problems, probs...)
		if len(probs) == 0 {
			if origin != nil {
				m.origin = origin(name)
			}
			if prev, dup := cat.models[m.ID]; dup {
				problems = append(problems, fmt.Sprintf("%s: id %q is already used by %s: ids must be unique", name, m.ID, prev.file))
				continue
			}
			cat.models[m.ID] = m
		}
	}
	if len(problems) > 0 {
		return Catalog{}, &ValidationError{Problems: problems}
	}
	return cat, nil
}

// Parse decodes and validates one catalog file. It returns every problem, each prefixed with the file name.
func Parse(file string, data []byte) (Model, []string) {
	var problems []string
	add := func(field, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s: %s", file, field, fmt.Sprintf(format, args...)))
	}
	var m Model
	if probs := strictjson.Decode(data, &m, "remove it or check its spelling against the other catalog files (models/*.json) and the README's model catalog section", "a catalog file is one JSON object describing one model"); len(probs) > 0 {
		for _, p := range probs {
			if strings.HasPrefix(p, replacedPriceField+": unknown field:") {
				problems = append(problems, replacedPriceProblem(file))
				continue
			}
			problems = append(problems, file+": "+p)
		}
		return Model{}, problems
	}
	m.file = file
	m.validate(add)
	if len(problems) > 0 {
		return Model{}, problems
	}
	return m, nil
}

var (
	idPattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,40}[a-z0-9]$`)
	revisionPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
	repoPattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	instancePattern = regexp.MustCompile(`^ml\.[a-z0-9]+\.[a-z0-9]+$`)
	// secretNamePattern is what Secrets Manager accepts in a secret name.
	secretNamePattern = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]{1,512}$`)
)

// validate reports every semantic problem of a decoded entry through add.
func (m Model) validate(add func(field, format string, args ...any)) {
	if !idPattern.MatchString(m.ID) {
		add("id", "%q is not a valid model id: use 2-42 lowercase letters, digits and hyphens (it becomes part of stack and endpoint names)", m.ID)
	} else if want := m.ID + ".json"; path.Base(m.file) != want {
		add("id", "%q does not match the file name: rename the file to %s or change the id", m.ID, want)
	}
	if !contains(Engines, m.Engine) {
		add("engine", "unknown engine %q: use one of %s", m.Engine, strings.Join(Engines, ", "))
	}
	if m.Source != nil {
		if !repoPattern.MatchString(m.Source.Repo) {
			add("source.repo", "%q is not a Hugging Face repository: use owner/name", m.Source.Repo)
		}
		if !revisionPattern.MatchString(m.Source.Revision) {
			add("source.revision", "%q is not a pinned commit: use the full 40-hex-character commit id, not a branch or tag", m.Source.Revision)
		}
		if len(m.Source.Files) == 0 {
			add("source.files", "is empty: list the files (globs allowed) the model needs")
		}
		for i, f := range m.Source.Files {
			if f == "" || strings.HasPrefix(f, "/") || strings.Contains(f, "..") {
				add(fmt.Sprintf("source.files[%d]", i), "%q must be a relative path inside the repository", f)
			} else if _, err := path.Match(f, ""); err != nil {
				add(fmt.Sprintf("source.files[%d]", i), "%q is not a valid pattern (%v): use path.Match syntax, e.g. voices/*.bin", f, err)
			}
		}
		if m.Source.TokenSecret != "" && !secretNamePattern.MatchString(m.Source.TokenSecret) {
			add("source.token_secret", "%q is not a Secrets Manager secret name: use 1-512 letters, digits and /_+=.@- (or leave the field out for a public repository)", m.Source.TokenSecret)
		}
	} else if m.Engine == "kokoro" {
		add("source", "is missing: the kokoro engine needs weights; give repo, revision and files")
	}
	switch {
	case m.Engine == "calibration" && m.Twin == nil:
		add("twin", "is missing: the calibration engine stands in for a measured instance; give of, segment_ms, workers and basis")
	case m.Engine != "calibration" && m.Twin != nil:
		add("twin", "is only for the calibration engine: drop it, or set engine to calibration")
	case m.Twin != nil:
		if !idPattern.MatchString(m.Twin.Of) {
			add("twin.of", "%q is not a model id: name the model this is a twin of", m.Twin.Of)
		}
		if m.Twin.SegmentMs < 1 || m.Twin.SegmentMs > 10000 {
			add("twin.segment_ms", "is %d: want 1 to 10000 milliseconds of compute per segment", m.Twin.SegmentMs)
		}
		if m.Twin.Workers < 1 || m.Twin.Workers > 64 {
			add("twin.workers", "is %d: want 1 to 64 synthesis slots", m.Twin.Workers)
		}
		if strings.TrimSpace(m.Twin.Basis) == "" {
			add("twin.basis", "is empty: say where the service time comes from")
		}
	}
	if m.InstanceType != LocalInstanceType && !instancePattern.MatchString(m.InstanceType) {
		add("instance_type", "%q is not a SageMaker instance type: use a name like ml.g5.xlarge", m.InstanceType)
	}
	m.validatePrices(add)
	if m.InitialInstanceCount < 1 {
		add("initial_instance_count", "is %d: it must be at least 1", m.InitialInstanceCount)
	}
	if m.SLO.TTFABMs < 1 || m.SLO.TTFABMs > MaxSLOMs {
		add("slo.ttfab_ms", "is %d: the SLO must be 1 to %d milliseconds", m.SLO.TTFABMs, MaxSLOMs)
	}
	if m.SLO.StallBudgetMs < 0 || m.SLO.StallBudgetMs > MaxSLOMs {
		add("slo.stall_budget_ms", "is %d: the p95 playback stall budget must be 0 to %d milliseconds (0 = no audible gap)", m.SLO.StallBudgetMs, MaxSLOMs)
	}
	if m.SLO.Percentile < 50 || m.SLO.Percentile > 99 {
		add("slo.percentile", "is %d: use a percentile between 50 and 99 (95 for p95)", m.SLO.Percentile)
	}
	if m.QueueMaxDepth < 1 || m.QueueMaxDepth > MaxQueueDepth {
		add("queue_max_depth", "is %d: the shield depth must be 1 to %d (0 = unbounded is only the measurement configuration, set by the stack)", m.QueueMaxDepth, MaxQueueDepth)
	}
	if m.Scaling.MinInstances < 1 || m.Scaling.MinInstances > MaxInstances {
		add("scaling.min_instances", "is %d: it must be 1 to %d", m.Scaling.MinInstances, MaxInstances)
	}
	if m.Scaling.MaxInstances < 1 || m.Scaling.MaxInstances > MaxInstances {
		add("scaling.max_instances", "is %d: it must be 1 to %d", m.Scaling.MaxInstances, MaxInstances)
	}
	if m.Scaling.MinInstances > m.Scaling.MaxInstances {
		add("scaling.min_instances", "is %d, above scaling.max_instances %d: lower the minimum or raise the maximum", m.Scaling.MinInstances, m.Scaling.MaxInstances)
	}
	if m.InitialInstanceCount > m.Scaling.MaxInstances && m.Scaling.MaxInstances >= 1 {
		add("initial_instance_count", "is %d, above scaling.max_instances %d", m.InitialInstanceCount, m.Scaling.MaxInstances)
	}
	if !ValidSurgeRatio(m.Planning.SurgeRatio) {
		add("planning.surge_ratio", "is %s: use a ratio in [1, %d] (1.25 means load may grow 25%% within one T_plan)", strconv.FormatFloat(m.Planning.SurgeRatio, 'g', -1, 64), MaxSurgeRatio)
	}
	if !(m.Planning.DetectionBufferS >= 0 && m.Planning.DetectionBufferS <= MaxDetectionBufferS) {
		add("planning.detection_buffer_s", "is %s: use 0 to %d seconds", strconv.FormatFloat(m.Planning.DetectionBufferS, 'g', -1, 64), MaxDetectionBufferS)
	}
	if m.Container.StartupHealthCheckTimeoutS < 60 || m.Container.StartupHealthCheckTimeoutS > 3600 {
		add("container.startup_health_check_timeout_s", "is %d: SageMaker accepts 60 to 3600 seconds", m.Container.StartupHealthCheckTimeoutS)
	}
	if m.Container.ModelDownloadTimeoutS < 60 || m.Container.ModelDownloadTimeoutS > 3600 {
		add("container.model_download_timeout_s", "is %d: SageMaker accepts 60 to 3600 seconds", m.Container.ModelDownloadTimeoutS)
	}
	if m.Container.InvocationTimeoutS < 1 || m.Container.InvocationTimeoutS > 3600 {
		add("container.invocation_timeout_s", "is %d: use 1 to 3600 seconds", m.Container.InvocationTimeoutS)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ValidSurgeRatio says whether s is a surge ratio a catalog or a plan may hold: in [1, MaxSurgeRatio].
func ValidSurgeRatio(s float64) bool { return s >= 1 && s <= MaxSurgeRatio }
