package cloud

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// The measurement marker. A freeze journal lives on the measuring machine, in one journal directory: two runs
// from two directories, or two machines, do not see each other's journal. So a measurement also marks the
// endpoint itself, with a SageMaker tag every machine reads (ListTags), before it freezes anything:
//
//	speech-infra:measurement = run=<run id> owner=<user@host> pid=<pid> start=<RFC 3339> expires=<RFC 3339>
//
// A measurement refuses an endpoint that carries another run's marker, or whose dynamic scaling is suspended
// without a marker of its own run (Freeze). The restore at the end (and tts-bench thaw with the run's
// journal) removes the marker of its own run; tts-bench thaw --force removes any.
//
// The expiry is the run's own bound on its duration (the planned duration bound plus MarkerMargin): a marker
// past it belongs to a run that ended without removing it (kill -9, a lost machine) or that overran its bound.
// A measurement refuses an expired marker too, naming it, unless it is given --force: --force overrides an
// expired marker only, never a live one, and never suspended scaling.
//
// The tag value must match SageMaker's TagValue pattern ([\p{L}\p{Z}\p{N}_.:/=+\-@]*, at most 256 characters):
// no JSON. Fields are space-separated key=value pairs.

// MarkerTagKey is the tag that holds the measurement marker.
const MarkerTagKey = "speech-infra:measurement"

// MarkerMargin is added to a run's planned duration bound for its marker's expiry: the freeze and the restore
// (each waits for InService, minutes on AWS) and a slow network.
const MarkerMargin = 30 * time.Minute

// DefaultMarkerDuration is the planned duration bound of a run that gives none (FreezeOptions.Duration 0).
const DefaultMarkerDuration = 2 * time.Hour

// maxMarkerField bounds the run id and the owner in a marker.
const maxMarkerField = 64

// Marker is a measurement's mark on an endpoint.
type Marker struct {
	// RunID is the run that wrote it; Owner is user@host of its process and PID its process id.
	RunID string
	Owner string
	PID   int
	// Started is when the marker was written, Expires when it stops holding (UTC, to the second).
	Started, Expires time.Time
}

// Value is the marker as the tag value.
func (m Marker) Value() string {
	return fmt.Sprintf("run=%s owner=%s pid=%d start=%s expires=%s", m.RunID, m.Owner, m.PID,
		m.Started.UTC().Format(time.RFC3339), m.Expires.UTC().Format(time.RFC3339))
}

// Expired reports whether the marker's expiry has passed at now.
func (m Marker) Expired(now time.Time) bool { return !now.Before(m.Expires) }

// Describe names the marker for a message, relative to now: "run R by alice@box (pid 12), started T,
// expires E (in 41m)" or "..., expired at E (3m ago)".
func (m Marker) Describe(now time.Time) string {
	exp := fmt.Sprintf("expires %s (in %s)", m.Expires.UTC().Format(time.RFC3339), m.Expires.Sub(now).Round(time.Second))
	if m.Expired(now) {
		exp = fmt.Sprintf("expired at %s (%s ago)", m.Expires.UTC().Format(time.RFC3339), now.Sub(m.Expires).Round(time.Second))
	}
	return fmt.Sprintf("run %s by %s (pid %d), started %s, %s", m.RunID, m.Owner, m.PID, m.Started.UTC().Format(time.RFC3339), exp)
}

// markerFieldRE is what a run id and an owner may hold: the tag pattern without spaces (the separator).
var markerFieldRE = regexp.MustCompile(`^[\p{L}\p{N}_.:/=+\-@]{1,64}$`)

// ParseMarker reads a marker tag value; a value not in the format (hand-edited, or another tool's) is an
// error naming what is wrong.
func ParseMarker(v string) (Marker, error) {
	var m Marker
	fields := map[string]string{}
	for _, f := range strings.Fields(v) {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return m, fmt.Errorf("marker %q: %q is not key=value", v, f)
		}
		if _, dup := fields[k]; dup {
			return m, fmt.Errorf("marker %q: %s given twice", v, k)
		}
		fields[k] = val
	}
	var errs []string
	m.RunID, m.Owner = fields["run"], fields["owner"]
	if !markerFieldRE.MatchString(m.RunID) {
		errs = append(errs, "no run id")
	}
	if !markerFieldRE.MatchString(m.Owner) {
		errs = append(errs, "no owner")
	}
	if p, err := strconv.Atoi(fields["pid"]); err == nil && p >= 0 {
		m.PID = p
	} else {
		errs = append(errs, "no pid")
	}
	var err error
	if m.Started, err = time.Parse(time.RFC3339, fields["start"]); err != nil {
		errs = append(errs, "no start time")
	}
	if m.Expires, err = time.Parse(time.RFC3339, fields["expires"]); err != nil {
		errs = append(errs, "no expiry")
	}
	if len(errs) > 0 {
		return Marker{}, fmt.Errorf("marker %q: %s", v, strings.Join(errs, ", "))
	}
	return m, nil
}

// CurrentOwner is user@host of this process, reduced to what a marker can hold (any other character
// becomes '_', at most 64 characters).
func CurrentOwner() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if s := os.Getenv("USER"); s != "" {
		name = s
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return markerSafe(name + "@" + host)
}

// markerSafe replaces what a marker field cannot hold with '_' and bounds its length.
func markerSafe(s string) string {
	out := []rune{}
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || strings.ContainsRune("_.:/=+-@", r) {
			out = append(out, r)
		} else {
			out = append(out, '_')
		}
		if len(out) == maxMarkerField {
			break
		}
	}
	return string(out)
}

// MarkerAPI is the part of the SageMaker client that reads and writes the marker.
type MarkerAPI interface {
	ListTags(ctx context.Context, in *sagemaker.ListTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error)
	AddTags(ctx context.Context, in *sagemaker.AddTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error)
	DeleteTags(ctx context.Context, in *sagemaker.DeleteTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error)
}

// FoundMarker is the marker tag an endpoint carries: the raw value and, when it parses, the marker.
type FoundMarker struct {
	Raw string
	// Marker is the parsed marker; nil when Raw does not parse (ParseErr says why).
	Marker   *Marker
	ParseErr error
}

// Describe names the marker for a message.
func (f *FoundMarker) Describe(now time.Time) string {
	if f.Marker != nil {
		return f.Marker.Describe(now)
	}
	return fmt.Sprintf("an unreadable marker %s=%q (%v)", MarkerTagKey, f.Raw, f.ParseErr)
}

// Of reports whether the marker is runID's.
func (f *FoundMarker) Of(runID string) bool {
	return f != nil && f.Marker != nil && f.Marker.RunID == runID
}

// ReadMarker reads the endpoint's marker (ListTags on its ARN, every page); nil when it carries none.
func ReadMarker(ctx context.Context, api MarkerAPI, arn string) (*FoundMarker, error) {
	if arn == "" {
		return nil, errors.New("read the measurement marker: the endpoint's ARN is unknown (DescribeEndpoint gave none)")
	}
	in := &sagemaker.ListTagsInput{ResourceArn: aws.String(arn)}
	for range 100 {
		out, err := api.ListTags(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read the measurement marker: ListTags %s: %w", arn, err)
		}
		for _, t := range out.Tags {
			if aws.ToString(t.Key) == MarkerTagKey {
				f := &FoundMarker{Raw: aws.ToString(t.Value)}
				m, err := ParseMarker(f.Raw)
				if err != nil {
					f.ParseErr = err
				} else {
					f.Marker = &m
				}
				return f, nil
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return nil, nil
		}
		in.NextToken = out.NextToken
	}
	return nil, fmt.Errorf("read the measurement marker: ListTags %s: more than 100 pages", arn)
}

// writeMarker sets the endpoint's marker (AddTags overwrites the key).
func writeMarker(ctx context.Context, api MarkerAPI, arn string, m Marker) error {
	if _, err := api.AddTags(ctx, &sagemaker.AddTagsInput{ResourceArn: aws.String(arn),
		Tags: []smtypes.Tag{{Key: aws.String(MarkerTagKey), Value: aws.String(m.Value())}}}); err != nil {
		return fmt.Errorf("write the measurement marker: AddTags %s: %w", arn, err)
	}
	return nil
}

// deleteMarker removes the endpoint's marker tag.
func deleteMarker(ctx context.Context, api MarkerAPI, arn string) error {
	if _, err := api.DeleteTags(ctx, &sagemaker.DeleteTagsInput{ResourceArn: aws.String(arn), TagKeys: []string{MarkerTagKey}}); err != nil {
		return fmt.Errorf("remove the measurement marker: DeleteTags %s: %w", arn, err)
	}
	return nil
}

// clearMarker removes the endpoint's marker when it is runID's, or any marker when force; it returns what it
// did (a change) or what it left (a note), either possibly empty.
func clearMarker(ctx context.Context, api MarkerAPI, arn, runID string, force bool) (change, note string, err error) {
	f, err := ReadMarker(ctx, api, arn)
	if err != nil || f == nil {
		return "", "", err
	}
	now := time.Now()
	switch {
	case f.Of(runID):
		if err := deleteMarker(ctx, api, arn); err != nil {
			return "", "", err
		}
		return fmt.Sprintf("removed the measurement marker of this run (%s)", f.Describe(now)), "", nil
	case force:
		if err := deleteMarker(ctx, api, arn); err != nil {
			return "", "", err
		}
		return fmt.Sprintf("removed the measurement marker of another run (--force): %s", f.Describe(now)), "", nil
	default:
		return "", fmt.Sprintf("the measurement marker on the endpoint is another run's, not this one's (%s): left; tts-bench thaw --force removes it", f.Describe(now)), nil
	}
}

// ErrEndpointInUse says the endpoint carries another run's measurement marker, or its scaling is suspended
// without a marker of this run: another measurement (or an interrupted one) holds it.
var ErrEndpointInUse = errors.New("the endpoint is held by another measurement")

// CheckMarker refuses the endpoint's marker f (ReadMarker) as Freeze does, for a run whose own marker is not
// on the endpoint yet: any marker is another run's; overrideExpired (--force) lets an expired one pass. The
// commands call it before anything else (before drift), so that the refusal names the run holding the
// endpoint; Freeze checks again.
func CheckMarker(f *FoundMarker, endpoint string, overrideExpired bool, now time.Time) error {
	_, err := markerCheck(f, FreezeOptions{Endpoint: endpoint, OverrideExpired: overrideExpired}, now)
	return err
}

// markerCheck decides whether a freeze of runID may go ahead given the endpoint's marker: nil to go ahead,
// the marker it overrides (an expired one, with force), or an error wrapping ErrEndpointInUse.
func markerCheck(f *FoundMarker, o FreezeOptions, now time.Time) (*FoundMarker, error) {
	if f == nil || (o.RunID != "" && f.Of(o.RunID)) {
		return nil, nil
	}
	thawHere := fmt.Sprintf("tts-bench thaw --endpoint %s", o.Endpoint)
	switch {
	case f.Marker == nil:
		return nil, fmt.Errorf("%s: %w: it carries %s: if no measurement is running, remove it with %s --force (from any machine), then run again",
			o.Endpoint, ErrEndpointInUse, f.Describe(now), thawHere)
	case !f.Marker.Expired(now):
		return nil, fmt.Errorf("%s: %w: it carries the measurement marker of %s: that run is measuring it now. "+
			"Wait for it to end (its restore removes the marker), or run %s on %s with that run's --journal-dir, "+
			"or wait for the expiry and run again with --force; if that run is gone (kill -9, a lost machine), %s --force removes the marker from any machine. "+
			"--force does not override a live marker",
			o.Endpoint, ErrEndpointInUse, f.Describe(now), thawHere, f.Marker.Owner, thawHere)
	case !o.OverrideExpired:
		return nil, fmt.Errorf("%s: %w: it carries the EXPIRED measurement marker of %s: that run ended without removing it (kill -9, a lost machine) or overran its bound. "+
			"Make sure it is not running, then run again with --force (which overrides an expired marker only), or run %s on %s with that run's --journal-dir (or %s --force from any machine)",
			o.Endpoint, ErrEndpointInUse, f.Describe(now), thawHere, f.Marker.Owner, thawHere)
	}
	return f, nil
}
