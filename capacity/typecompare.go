package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/speech-infra/speech-infra/internal/atomicfile"
)

// CompareFile is the instance-type comparison's report (tts-bench compare) inside artifacts/<model>/.
const CompareFile = "compare.json"

// TypeArtifactDir is the directory that holds one instance type's artifact set of a comparison:
// artifacts/<model>/<type>/, with its qmax.json, ttotal.json and plan.json.
func TypeArtifactDir(modelID, instanceType string) string {
	return filepath.Join(ArtifactDir(modelID), instanceType)
}

// DefaultComparePath is where tts-bench compare writes its report for a model.
func DefaultComparePath(modelID string) string {
	return filepath.Join(ArtifactDir(modelID), CompareFile)
}

// TypeComparison is the report of tts-bench compare: one row per instance type measured, planned and simulated
// on one trace, and the cheapest type that holds the SLO (docs/design.md, "Instance types side by side").
type TypeComparison struct {
	SchemaVersion int    `json:"schema_version"`
	Model         string `json:"model"`
	// Trace names the trace every type's plan was simulated on; PeakRPS and TroughRPS are the plan inputs
	// every type was planned with (the trace's peak and trough), so that plan --from-compare plans the same.
	Trace     string  `json:"trace"`
	PeakRPS   float64 `json:"peak_rps"`
	TroughRPS float64 `json:"trough_rps"`
	// Local is true when the endpoints ran on the local emulator (instance-type profiles, not AWS).
	Local bool `json:"local"`
	// Rows are the types in the order given.
	Rows []TypeRow `json:"rows"`
	// Winner is the cheapest type (by cost per day on the trace) whose plan holds the SLO; "" when none does.
	Winner string `json:"winner"`
	// Notes are caveats that apply to the whole comparison.
	Notes []string `json:"notes,omitempty"`
}

// TypeRow is one instance type's results in a comparison.
type TypeRow struct {
	InstanceType string `json:"instance_type"`
	// ArtifactDir holds the type's qmax.json, ttotal.json and plan.json (TypeArtifactDir).
	ArtifactDir string `json:"artifact_dir"`
	// Error is set when the type could not be measured, planned or simulated; the numbers below are then zero
	// where they are unknown and Holds is false.
	Error string `json:"error,omitempty"`
	// QMaxTTFAB and QMaxStall are Q_max by TTFAB and by TTFAB plus stall.
	QMaxTTFAB int `json:"q_max_ttfab"`
	QMaxStall int `json:"q_max_stall"`
	// SafeRPS is the highest rate one instance serves within the SLO.
	SafeRPS float64 `json:"safe_rps"`
	// TTotalS is the measured time from scale-out to a new instance serving.
	TTotalS float64 `json:"t_total_s"`
	// MinInstances and MaxInstances are the plan's fleet range.
	MinInstances int `json:"min_instances"`
	MaxInstances int `json:"max_instances"`
	// Feasible is the plan's own verdict on its envelope.
	Feasible bool `json:"feasible"`
	// ViolationMinutes, InstanceHours and Shed are the plan's simulation on the trace.
	ViolationMinutes int     `json:"violation_minutes"`
	InstanceHours    float64 `json:"instance_hours"`
	Requests         float64 `json:"requests"`
	// PricePerHourUSD is the price used and PriceSource where it comes from (the catalog's entry or a flag).
	PricePerHourUSD float64 `json:"price_per_hour_usd"`
	PriceSource     string  `json:"price_source"`
	// CostPerDayUSD is the trace's instance-hours at the price, scaled to 24 hours.
	CostPerDayUSD float64 `json:"cost_per_day_usd"`
	// CostPer1000USD is the trace's cost ÷ its requests × 1000.
	CostPer1000USD float64 `json:"cost_per_1000_requests_usd"`
	// CPUPercent and MemoryMB are the container's measured use during qmax (from its EMF metrics: the
	// maximum of the per-minute figures); nil when no metric was found.
	CPUPercent *float64 `json:"cpu_percent,omitempty"`
	MemoryMB   *float64 `json:"memory_mb,omitempty"`
	// Holds is true when the plan is feasible and its simulation on the trace has no violation minute.
	Holds bool `json:"holds"`
	// Finding says why the type does not hold (the plan's failing finding or the simulation's worst minute);
	// "" when it holds.
	Finding string `json:"finding,omitempty"`
}

// Validate reports every inconsistency of a comparison report, each naming the field.
func (c *TypeComparison) Validate() error {
	var errs []string
	if c.SchemaVersion != SchemaVersion {
		errs = append(errs, fmt.Sprintf("schema_version: is %d, want %d", c.SchemaVersion, SchemaVersion))
	}
	if c.Model == "" {
		errs = append(errs, "model: empty")
	}
	seen := map[string]bool{}
	var winner *TypeRow
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.InstanceType == "" {
			errs = append(errs, fmt.Sprintf("rows[%d].instance_type: empty", i))
		}
		if seen[r.InstanceType] {
			errs = append(errs, fmt.Sprintf("rows[%d].instance_type: %s appears twice", i, r.InstanceType))
		}
		seen[r.InstanceType] = true
		if r.Holds && (r.Error != "" || !r.Feasible || r.ViolationMinutes > 0) {
			errs = append(errs, fmt.Sprintf("rows[%d].holds: true, but error %q, feasible %v, %d violation minutes", i, r.Error, r.Feasible, r.ViolationMinutes))
		}
		if r.InstanceType == c.Winner {
			winner = r
		}
	}
	if c.Winner != "" {
		switch {
		case winner == nil:
			errs = append(errs, fmt.Sprintf("winner: %s is not a row", c.Winner))
		case !winner.Holds:
			errs = append(errs, fmt.Sprintf("winner: %s does not hold the SLO", c.Winner))
		default:
			for _, r := range c.Rows {
				if r.Holds && r.CostPerDayUSD < winner.CostPerDayUSD {
					errs = append(errs, fmt.Sprintf("winner: %s costs %.2f USD a day but %s holds for %.2f", c.Winner, winner.CostPerDayUSD, r.InstanceType, r.CostPerDayUSD))
				}
			}
		}
	} else {
		for _, r := range c.Rows {
			if r.Holds {
				errs = append(errs, fmt.Sprintf("winner: empty, but %s holds the SLO", r.InstanceType))
			}
		}
	}
	if len(errs) > 0 {
		return &LoadError{Kind: "compare", Source: "input", Problems: errs}
	}
	return nil
}

// Row returns the row of the instance type, or nil.
func (c *TypeComparison) Row(instanceType string) *TypeRow {
	for i := range c.Rows {
		if c.Rows[i].InstanceType == instanceType {
			return &c.Rows[i]
		}
	}
	return nil
}

// LoadTypeComparison reads and strictly decodes a comparison report and validates it.
func LoadTypeComparison(path string) (*TypeComparison, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c TypeComparison
	if probs := decodeStrict(data, &c); len(probs) > 0 {
		return nil, &LoadError{Kind: "compare", Source: path, Problems: probs}
	}
	if err := c.Validate(); err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.Source = path
		}
		return nil, err
	}
	return &c, nil
}

// WriteTypeComparison validates the report and writes it atomically.
func WriteTypeComparison(path string, c *TypeComparison) error {
	if err := c.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

// InstanceTypeList is a comma-separated list of instance types as given (tts-bench compare
// --instance-types): how many entries it has (blank ones dropped), the distinct types in their order, and the
// types given more than once.
type InstanceTypeList struct {
	Entries  int
	Distinct []string
	// Repeated says of each type given more than once how often: "ml.g5.xlarge is given twice".
	Repeated []string
}

// ParseInstanceTypeList counts the list's entries and finds its repeats; it does not check the types.
func ParseInstanceTypeList(s string) InstanceTypeList {
	var l InstanceTypeList
	seen := map[string]int{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if seen[t] == 0 {
			l.Distinct = append(l.Distinct, t)
		}
		seen[t]++
		l.Entries++
	}
	for _, t := range l.Distinct {
		switch n := seen[t]; {
		case n == 2:
			l.Repeated = append(l.Repeated, t+" is given twice")
		case n > 2:
			l.Repeated = append(l.Repeated, t+" is given "+strconv.Itoa(n)+" times")
		}
	}
	return l
}

// FirstRepeated joins the first n of Repeated, and says how many more there are.
func (l InstanceTypeList) FirstRepeated(n int) string {
	if len(l.Repeated) <= n {
		return strings.Join(l.Repeated, ", ")
	}
	return fmt.Sprintf("%s and %d more repeated", strings.Join(l.Repeated[:n], ", "), len(l.Repeated)-n)
}
