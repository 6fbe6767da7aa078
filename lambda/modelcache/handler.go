package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/speech-infra/speech-infra/modelsync"
)

// Margins of one invocation.
const (
	// DefaultMargin is the time kept free before the invocation's deadline: Sync stops this long before it,
	// which leaves room to abort an unfinished multipart upload (modelsync bounds that cleanup to 30 s) and
	// to answer the provider before Lambda ends the invocation.
	DefaultMargin = 90 * time.Second
	// NoDeadlineBudget bounds a run whose context carries no deadline (never the case in Lambda).
	NoDeadlineBudget = 13 * time.Minute
)

// SecretsAPI is the part of the Secrets Manager client the handler uses; *secretsmanager.Client satisfies it.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Handler answers the custom resource provider's onEvent and isComplete invocations.
type Handler struct {
	// S3 writes the weights bucket.
	S3 modelsync.S3API
	// Secrets reads the optional Hugging Face token; needed only when the resource names a secret.
	Secrets SecretsAPI
	// HTTPClient fetches from the Hub; nil means modelsync's default client (with timeouts).
	HTTPClient *http.Client
	// Margin is kept free before the invocation's deadline; 0 means DefaultMargin.
	Margin time.Duration
	// PartSize is the multipart part size; 0 means modelsync.DefaultPartSize.
	PartSize int64
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Properties are the custom resource's properties, as stacks.NewModelCacheStack sets them.
type Properties struct {
	// ServiceToken is the provider's function ARN (CloudFormation adds it to every custom resource).
	ServiceToken string `json:"ServiceToken"`
	// ModelID is the catalog id of the model.
	ModelID string `json:"ModelId"`
	// Repo is the Hugging Face repository, owner/name.
	Repo string `json:"Repo"`
	// Revision is the pinned commit.
	Revision string `json:"Revision"`
	// Files are the catalog's file patterns.
	Files []string `json:"Files"`
	// Bucket is the weights bucket.
	Bucket string `json:"Bucket"`
	// Prefix is models/<model>/<revision>/, where the endpoint reads the files.
	Prefix string `json:"Prefix"`
	// HubEndpoint is the Hub (or a mirror); empty means modelsync.DefaultEndpoint.
	HubEndpoint string `json:"HubEndpoint"`
	// TokenSecret names the Secrets Manager secret (name or full ARN) whose SecretString is a Hugging Face
	// token; empty for public repositories.
	TokenSecret string `json:"TokenSecret"`
}

// Response is the answer to both invocations: onEvent reads PhysicalResourceId (and passes the rest on to
// isComplete), isComplete reads IsComplete and Data. Data is set only once the sync is done, because the
// provider refuses Data with IsComplete false.
type Response struct {
	// PhysicalResourceID identifies the synced revision: s3://<bucket>/<prefix>. A new revision is a new
	// prefix and so a new physical id; CloudFormation's Delete of the old one leaves its objects in place.
	PhysicalResourceID string `json:"PhysicalResourceId"`
	// IsComplete is false while files remain to be synced.
	IsComplete bool `json:"IsComplete"`
	// Data are the resource's attributes (Prefix, Files, Uploaded, Skipped, ManifestUri) once complete.
	Data map[string]string `json:"Data,omitempty"`
}

// ParseProperties decodes and checks the resource's properties: every field is known, the prefix is the
// one the endpoint reads for this model and revision (models/<model>/<revision>/, which is also all the
// function's role may write), and the files, bucket and repository are given.
func ParseProperties(raw map[string]any) (Properties, error) {
	var p Properties
	data, err := json.Marshal(raw)
	if err != nil {
		return p, fmt.Errorf("resource properties: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("resource properties: %w: the stack and the function disagree on the properties: deploy the stack again so both come from one synthesis", err)
	}
	var problems []string
	if p.ModelID == "" {
		problems = append(problems, "ModelId is empty")
	}
	if p.Repo == "" {
		problems = append(problems, "Repo is empty")
	}
	if p.Bucket == "" {
		problems = append(problems, "Bucket is empty")
	}
	if len(p.Files) == 0 {
		problems = append(problems, "Files is empty: the catalog's source.files must select at least one file")
	}
	if want := modelsync.ObjectPrefix(p.ModelID, p.Revision); p.ModelID != "" && p.Prefix != want {
		problems = append(problems, fmt.Sprintf("Prefix %q is not %q, where the endpoint of %s reads revision %q", p.Prefix, want, p.ModelID, p.Revision))
	}
	if len(problems) > 0 {
		return p, fmt.Errorf("resource properties: %s: synthesize the stack with stacks.NewModelCacheStack, which sets them from the catalog", strings.Join(problems, "; "))
	}
	return p, nil
}

// PhysicalID is the physical resource id of a synced revision.
func (p Properties) PhysicalID() string { return "s3://" + p.Bucket + "/" + p.Prefix }

// Handle answers one onEvent or isComplete invocation.
func (h *Handler) Handle(ctx context.Context, ev cfn.Event) (Response, error) {
	logf := h.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	switch ev.RequestType {
	case cfn.RequestDelete:
		// The files stay: an endpoint (or a rollback to it) may still read them, and the foundation bucket
		// keeps every version anyway.
		logf("%s %s: %s: leaving the objects in place", ev.RequestType, ev.LogicalResourceID, ev.PhysicalResourceID)
		return Response{PhysicalResourceID: ev.PhysicalResourceID, IsComplete: true}, nil
	case cfn.RequestCreate, cfn.RequestUpdate:
	default:
		return Response{}, fmt.Errorf("request type %q: the provider sends Create, Update or Delete: is this function invoked by something else than its custom resource provider?", ev.RequestType)
	}
	p, err := ParseProperties(ev.ResourceProperties)
	if err != nil {
		return Response{}, err
	}
	src := modelsync.Source{Endpoint: p.HubEndpoint, Repo: p.Repo, Revision: p.Revision, Patterns: p.Files, HTTPClient: h.HTTPClient}
	if p.TokenSecret != "" {
		tok, err := h.token(ctx, p.TokenSecret)
		if err != nil {
			return Response{}, err
		}
		src.Token = tok
	}
	margin := h.Margin
	if margin <= 0 {
		margin = DefaultMargin
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(NoDeadlineBudget + margin)
	}
	deadline = deadline.Add(-margin)
	dst := &modelsync.S3{Client: h.S3, Bucket: p.Bucket, Prefix: p.Prefix, PartSize: h.PartSize}
	logf("%s %s: sync %s@%s (%s) into %s until %s", ev.RequestType, ev.LogicalResourceID, p.Repo, p.Revision, strings.Join(p.Files, ", "), dst, deadline.UTC().Format(time.RFC3339))
	res, err := modelsync.Sync(ctx, src, dst, modelsync.Options{Deadline: deadline, Logf: logf})
	if err != nil {
		return Response{}, fmt.Errorf("sync %s@%s into %s: %w", p.Repo, p.Revision, dst, err)
	}
	out := Response{PhysicalResourceID: p.PhysicalID(), IsComplete: res.Done}
	if !res.Done {
		logf("not complete: %d files fetched this time (%d bytes), %d already present; the provider resumes the sync", len(res.Uploaded), res.Bytes, len(res.Skipped))
		return out, nil
	}
	files := 0
	if res.Manifest != nil {
		files = len(res.Manifest.Files)
	}
	out.Data = map[string]string{
		"Prefix":      p.Prefix,
		"ManifestUri": p.PhysicalID() + modelsync.ManifestName,
		"Files":       strconv.Itoa(files),
		"Uploaded":    strconv.Itoa(len(res.Uploaded)),
		"Skipped":     strconv.Itoa(len(res.Skipped)),
	}
	return out, nil
}

// token reads the Hugging Face token from the secret's SecretString.
func (h *Handler) token(ctx context.Context, secret string) (modelsync.Token, error) {
	if h.Secrets == nil {
		return "", errors.New("read the Hugging Face token: no Secrets Manager client configured")
	}
	out, err := h.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &secret})
	if err != nil {
		return "", fmt.Errorf("read the Hugging Face token from secret %s: %w: check that the secret exists in this account and region and that the catalog names it", secret, err)
	}
	if out.SecretString == nil || strings.TrimSpace(*out.SecretString) == "" {
		return "", fmt.Errorf("read the Hugging Face token from secret %s: the secret has no SecretString: store the token as plain text (aws secretsmanager put-secret-value --secret-id %s --secret-string hf_...)", secret, secret)
	}
	return modelsync.Token(strings.TrimSpace(*out.SecretString)), nil
}
