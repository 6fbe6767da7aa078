package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/speech-infra/speech-infra/modelsync"
)

const (
	bucket   = "weights"
	repo     = "acme/tiny-tts"
	model    = "tiny-tts"
	revision = "0123456789abcdef0123456789abcdef01234567"
)

var prefix = "models/" + model + "/" + revision + "/"

// hub is a real HTTP server serving a small repository in the Hugging Face tree/resolve format.
type hub struct {
	srv      *httptest.Server
	files    map[string][]byte
	lfs      map[string]bool
	token    string          // when set, requests must carry "Bearer <token>"
	corrupt  map[string]bool // serve with one byte flipped
	slow     map[string]time.Duration
	requests atomic.Int64
	mu       sync.Mutex
	fetches  map[string]int
}

func newHub(t *testing.T) *hub {
	h := &hub{
		files: map[string][]byte{
			"config.json":   []byte(`{"sample_rate": 24000}` + "\n"),
			"model.onnx":    bytes.Repeat([]byte("weights!"), 4096),
			"voices/af.bin": bytes.Repeat([]byte{1, 2, 3}, 1000),
			"README.md":     []byte("# not selected\n"),
		},
		lfs:     map[string]bool{"model.onnx": true, "voices/af.bin": true},
		corrupt: map[string]bool{}, slow: map[string]time.Duration{}, fetches: map[string]int{},
	}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hub) serve(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		http.Error(w, `{"error":"Access to model acme/tiny-tts is restricted."}`, http.StatusUnauthorized)
		return
	}
	tree := "/api/models/" + repo + "/tree/" + revision
	resolve := "/" + repo + "/resolve/" + revision + "/"
	switch {
	case r.URL.Path == tree && r.URL.Query().Get("recursive") == "1":
		var entries []map[string]any
		for p, b := range h.files {
			s1 := sha1.New()
			fmt.Fprintf(s1, "blob %d\x00", len(b))
			s1.Write(b)
			e := map[string]any{"type": "file", "path": p, "size": len(b), "oid": hex.EncodeToString(s1.Sum(nil))}
			if h.lfs[p] {
				sum := sha256.Sum256(b)
				e["lfs"] = map[string]any{"oid": hex.EncodeToString(sum[:]), "size": len(b)}
			}
			entries = append(entries, e)
		}
		entries = append(entries, map[string]any{"type": "directory", "path": "voices", "oid": strings.Repeat("0", 40), "size": 0})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(entries)
	case strings.HasPrefix(r.URL.Path, resolve):
		p := strings.TrimPrefix(r.URL.Path, resolve)
		b, ok := h.files[p]
		if !ok {
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		// slow and corrupt are read under mu: a test changes them while an interrupted request's handler may
		// still be running (the race detector caught one in TestDeadlineReturnsIncompleteThenResumes).
		h.mu.Lock()
		h.fetches[p]++
		d, bad := h.slow[p], h.corrupt[p]
		h.mu.Unlock()
		if d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		if bad {
			b = append([]byte(nil), b...)
			b[len(b)/2] ^= 0xff
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Write(b)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func (h *hub) fetched(p string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fetches[p]
}

// store is gofakes3 on loopback behind the real SDK client, counting requests.
type store struct {
	client   *s3.Client
	requests atomic.Int64
}

func newStore(t *testing.T) *store {
	st := &store{}
	fake := gofakes3.New(s3mem.New()).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.requests.Add(1)
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	st.client = s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	})
	if _, err := st.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	st.requests.Store(0)
	return st
}

func (st *store) get(t *testing.T, key string) ([]byte, bool) {
	t.Helper()
	out, err := st.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var coded interface{ ErrorCode() string }
		if errors.As(err, &coded) && coded.ErrorCode() == "NoSuchKey" {
			return nil, false
		}
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

// event is what the CDK provider framework sends the user function (the framework replaces ResponseURL).
func event(t *testing.T, requestType, hubURL string, extra map[string]any) cfn.Event {
	t.Helper()
	props := map[string]any{
		"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:SpeechModelCacheStack-tiny-SyncProviderframeworkonEvent",
		"ModelId":      model, "Repo": repo, "Revision": revision,
		"Files":  []any{"model.onnx", "config.json", "voices/*.bin"},
		"Bucket": bucket, "Prefix": prefix, "HubEndpoint": hubURL,
	}
	for k, v := range extra {
		if v == nil {
			delete(props, k)
		} else {
			props[k] = v
		}
	}
	raw, err := json.Marshal(map[string]any{
		"RequestType": requestType, "ServiceToken": props["ServiceToken"], "ResponseURL": "...",
		"StackId":   "arn:aws:cloudformation:us-east-1:123456789012:stack/SpeechModelCacheStack-tiny/1",
		"RequestId": "5f1c", "LogicalResourceId": "Weights", "ResourceType": "Custom::SpeechModelCache",
		"ResourceProperties": props,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ev cfn.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func deadline(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func TestCreateSyncsThenIsCompleteSkips(t *testing.T) {
	// GIVEN a fake Hub and gofakes3 WHEN the provider sends Create THEN every selected file and manifest.json
	// are under the prefix, the response is complete with the s3:// physical id and its attributes.
	h, st := newHub(t), newStore(t)
	hd := &Handler{S3: st.client, Margin: time.Second, Logf: t.Logf}
	ctx, cancel := deadline(time.Minute)
	defer cancel()
	res, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsComplete || res.PhysicalResourceID != "s3://weights/"+prefix {
		t.Fatalf("response %+v", res)
	}
	if res.Data["Files"] != "3" || res.Data["Uploaded"] != "3" || res.Data["ManifestUri"] != "s3://weights/"+prefix+"manifest.json" {
		t.Errorf("data %v", res.Data)
	}
	for _, p := range []string{"model.onnx", "config.json", "voices/af.bin"} {
		got, ok := st.get(t, prefix+p)
		if !ok || !bytes.Equal(got, h.files[p]) {
			t.Errorf("%s: stored %d bytes (present %v), want the %d bytes the Hub serves", p, len(got), ok, len(h.files[p]))
		}
	}
	if _, ok := st.get(t, prefix+"README.md"); ok {
		t.Error("README.md was not selected but was stored")
	}
	raw, ok := st.get(t, prefix+"manifest.json")
	if !ok {
		t.Fatal("no manifest.json")
	}
	var man modelsync.Manifest
	if err := json.Unmarshal(raw, &man); err != nil || man.Repo != repo || man.Revision != revision || len(man.Files) != 3 {
		t.Errorf("manifest %s (%v)", raw, err)
	}

	// WHEN the provider's isComplete call follows (the onEvent answer merged into the event) THEN nothing is
	// fetched again and the resource is complete.
	ev := event(t, "Create", h.srv.URL, nil)
	ev.PhysicalResourceID = res.PhysicalResourceID
	res, err = hd.Handle(ctx, ev)
	if err != nil || !res.IsComplete || res.Data["Skipped"] != "3" || res.Data["Uploaded"] != "0" {
		t.Fatalf("isComplete: %+v, %v", res, err)
	}
	if n := h.fetched("model.onnx"); n != 1 {
		t.Errorf("model.onnx fetched %d times, want once", n)
	}
}

func TestDeadlineReturnsIncompleteThenResumes(t *testing.T) {
	// GIVEN a file the Hub does not serve until the request ends and an invocation whose deadline comes first
	// WHEN onEvent runs THEN it answers IsComplete false without Data or error and leaves no manifest; the next
	// (isComplete) invocation with time left fetches only what is missing and completes. The files are fetched
	// one after another in the tree's order (modelsync.Sync), so what the first invocation finished is known from
	// the store, not from how fast this machine is: the test asserts the resume against it.
	h, st := newHub(t), newStore(t)
	h.slow["voices/af.bin"] = time.Hour // served only when the request is cancelled, by the deadline
	hd := &Handler{S3: st.client, Margin: 500 * time.Millisecond, Logf: t.Logf}
	ctx, cancel := deadline(6 * time.Second)
	res, err := hd.Handle(ctx, event(t, "Update", h.srv.URL, nil))
	cancel()
	if err != nil {
		t.Fatalf("a deadline must not fail the deployment: %v", err)
	}
	if res.IsComplete || res.Data != nil || res.PhysicalResourceID != "s3://weights/"+prefix {
		t.Fatalf("response %+v, want incomplete without data", res)
	}
	if _, ok := st.get(t, prefix+"manifest.json"); ok {
		t.Fatal("manifest.json written before every file was verified")
	}
	if _, ok := st.get(t, prefix+"voices/af.bin"); ok {
		t.Fatal("the interrupted file is visible")
	}
	var done []string
	for _, f := range []string{"config.json", "model.onnx"} {
		if _, ok := st.get(t, prefix+f); ok {
			done = append(done, f)
		}
	}
	if h.fetched("voices/af.bin") > 0 && len(done) != 2 {
		t.Fatalf("the invocation reached voices/af.bin with only %v stored: the files before it must be done first", done)
	} else if h.fetched("voices/af.bin") == 0 {
		t.Logf("the deadline came before voices/af.bin was requested (%v stored)", done)
	}
	h.mu.Lock()
	delete(h.slow, "voices/af.bin")
	h.mu.Unlock()
	ctx, cancel = deadline(time.Minute)
	defer cancel()
	res, err = hd.Handle(ctx, event(t, "Update", h.srv.URL, nil))
	if err != nil || !res.IsComplete {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if want := fmt.Sprint(3 - len(done)); res.Data["Uploaded"] != want || res.Data["Skipped"] != fmt.Sprint(len(done)) {
		t.Errorf("resume uploaded %s and skipped %s, want %s and %d (the first invocation stored %v)", res.Data["Uploaded"], res.Data["Skipped"], want, len(done), done)
	}
	if slices.Contains(done, "model.onnx") {
		if n := h.fetched("model.onnx"); n != 1 {
			t.Errorf("model.onnx fetched %d times, want once (the first invocation stored it)", n)
		}
	}
}

func TestDeleteTouchesNothing(t *testing.T) {
	// GIVEN a synced revision WHEN CloudFormation deletes the resource THEN the answer keeps the physical id,
	// is complete, and neither the Hub nor S3 sees a single request; the objects stay.
	h, st := newHub(t), newStore(t)
	hd := &Handler{S3: st.client, Margin: time.Second, Logf: t.Logf}
	ctx, cancel := deadline(time.Minute)
	defer cancel()
	if _, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, nil)); err != nil {
		t.Fatal(err)
	}
	hubBefore, s3Before := h.requests.Load(), st.requests.Load()
	ev := event(t, "Delete", h.srv.URL, map[string]any{"Prefix": "garbage"}) // not even validated
	ev.PhysicalResourceID = "s3://weights/" + prefix
	res, err := hd.Handle(ctx, ev)
	if err != nil || !res.IsComplete || res.PhysicalResourceID != ev.PhysicalResourceID || res.Data != nil {
		t.Fatalf("delete: %+v, %v", res, err)
	}
	if h.requests.Load() != hubBefore || st.requests.Load() != s3Before {
		t.Errorf("delete made requests: hub %d, s3 %d", h.requests.Load()-hubBefore, st.requests.Load()-s3Before)
	}
	if _, ok := st.get(t, prefix+"manifest.json"); !ok {
		t.Error("objects gone after delete")
	}
}

func TestRefusedEvents(t *testing.T) {
	h, st := newHub(t), newStore(t)
	hd := &Handler{S3: st.client, Margin: time.Second}
	cases := []struct {
		name, requestType string
		extra             map[string]any
		want              string
	}{
		{"prefix of another model", "Create", map[string]any{"Prefix": "models/other/" + revision + "/"}, `Prefix "models/other/`},
		{"prefix outside models/", "Update", map[string]any{"Prefix": "../"}, "is not \"" + prefix + "\""},
		{"unknown property", "Create", map[string]any{"Bucket2": "x"}, `unknown field "Bucket2"`},
		{"no files", "Create", map[string]any{"Files": []any{}}, "Files is empty"},
		{"no bucket", "Create", map[string]any{"Bucket": nil}, "Bucket is empty"},
		{"files not a list", "Create", map[string]any{"Files": "model.onnx"}, "resource properties"},
		{"not a request type", "Poke", nil, `request type "Poke"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN properties the stack never synthesizes WHEN handled THEN an error names the problem and no
			// request reaches the Hub or S3.
			hubBefore, s3Before := h.requests.Load(), st.requests.Load()
			ctx, cancel := deadline(time.Minute)
			defer cancel()
			_, err := hd.Handle(ctx, event(t, tc.requestType, h.srv.URL, tc.extra))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
			if h.requests.Load() != hubBefore || st.requests.Load() != s3Before {
				t.Error("a refused event made requests")
			}
		})
	}
}

func TestCorruptFileFailsNamingIt(t *testing.T) {
	// GIVEN a Hub that serves one file with a flipped byte WHEN Create runs THEN the deployment fails naming
	// the file, that object is not stored and no manifest is written.
	h, st := newHub(t), newStore(t)
	h.corrupt["model.onnx"] = true
	hd := &Handler{S3: st.client, Margin: time.Second, Logf: t.Logf}
	ctx, cancel := deadline(time.Minute)
	defer cancel()
	_, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, nil))
	if err == nil || !strings.Contains(err.Error(), "model.onnx") || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("error %v, want it to name model.onnx and its sha256", err)
	}
	if _, ok := st.get(t, prefix+"model.onnx"); ok {
		t.Error("the corrupt file was stored")
	}
	if _, ok := st.get(t, prefix+"manifest.json"); ok {
		t.Error("manifest.json written despite a corrupt file")
	}
}

// secrets is a Secrets Manager double: one function field per method.
type secrets struct {
	getSecretValue func(id string) (*secretsmanager.GetSecretValueOutput, error)
}

func (s *secrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return s.getSecretValue(aws.ToString(in.SecretId))
}

func TestTokenFromSecret(t *testing.T) {
	h, st := newHub(t), newStore(t)
	h.token = "hf_gated"
	ctx, cancel := deadline(time.Minute)
	defer cancel()
	var asked []string
	sm := &secrets{getSecretValue: func(id string) (*secretsmanager.GetSecretValueOutput, error) {
		asked = append(asked, id)
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("hf_gated\n")}, nil
	}}

	// GIVEN a gated repository and no token WHEN Create runs THEN the Hub's 401 fails the deployment clearly.
	hd := &Handler{S3: st.client, Secrets: sm, Margin: time.Second}
	if _, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, nil)); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without a token: %v, want the Hub's 401", err)
	}
	// GIVEN the resource names the token secret WHEN Create runs THEN the token is read from it and sent.
	res, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, map[string]any{"TokenSecret": "speech-infra/hf-token"}))
	if err != nil || !res.IsComplete {
		t.Fatalf("with the token: %+v, %v", res, err)
	}
	if len(asked) != 1 || asked[0] != "speech-infra/hf-token" {
		t.Errorf("secrets asked: %v", asked)
	}
	// GIVEN an empty secret WHEN Create runs THEN the error says how to store the token.
	sm.getSecretValue = func(string) (*secretsmanager.GetSecretValueOutput, error) {
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("  ")}, nil
	}
	if _, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, map[string]any{"TokenSecret": "speech-infra/hf-token"})); err == nil || !strings.Contains(err.Error(), "put-secret-value") {
		t.Errorf("empty secret: %v", err)
	}
	// GIVEN Secrets Manager refuses WHEN Create runs THEN the error names the secret.
	sm.getSecretValue = func(string) (*secretsmanager.GetSecretValueOutput, error) {
		return nil, errors.New("AccessDeniedException")
	}
	if _, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, map[string]any{"TokenSecret": "speech-infra/hf-token"})); err == nil || !strings.Contains(err.Error(), "secret speech-infra/hf-token: AccessDeniedException") {
		t.Errorf("refused secret: %v", err)
	}
}

func TestUnknownRevisionFailsClearly(t *testing.T) {
	// GIVEN a revision the Hub does not have WHEN Create runs THEN the 404 fails the deployment.
	h, st := newHub(t), newStore(t)
	hd := &Handler{S3: st.client, Margin: time.Second}
	ctx, cancel := deadline(time.Minute)
	defer cancel()
	other := strings.Repeat("f", 40)
	_, err := hd.Handle(ctx, event(t, "Create", h.srv.URL, map[string]any{"Revision": other, "Prefix": "models/" + model + "/" + other + "/"}))
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("error %v, want the Hub's 404", err)
	}
}
