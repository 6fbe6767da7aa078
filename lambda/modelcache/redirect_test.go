package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// The Hugging Face token must not follow redirects. The Lambda's Hub answers model.onnx with a redirect to
// another port on the same host (the CDN): the file is fetched there without the token.
func TestTheLambdaSendsTheTokenOnlyToTheHub(t *testing.T) {
	h, st := newHub(t), newStore(t)
	h.token = "hf_gated_redirect"
	var mu sync.Mutex
	var cdnAuth []string
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cdnAuth = append(cdnAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write(h.files[strings.TrimPrefix(r.URL.Path, "/blobs/")])
	}))
	defer cdn.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/resolve/"+revision+"/model.onnx") && r.Header.Get("Authorization") == "Bearer "+h.token {
			http.Redirect(w, r, cdn.URL+"/blobs/model.onnx", http.StatusFound)
			return
		}
		h.serve(w, r)
	}))
	defer front.Close()
	sm := &secrets{getSecretValue: func(string) (*secretsmanager.GetSecretValueOutput, error) {
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(h.token)}, nil
	}}
	hd := &Handler{S3: st.client, Secrets: sm, Margin: time.Second}
	ctx, cancel := deadline(time.Minute)
	defer cancel()
	res, err := hd.Handle(ctx, event(t, "Create", front.URL, map[string]any{"TokenSecret": "speech-infra/hf-token"}))
	if err != nil || !res.IsComplete {
		t.Fatalf("Create: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cdnAuth) == 0 {
		t.Fatal("the CDN was never asked: the test does not test the redirect")
	}
	for _, a := range cdnAuth {
		if a != "" {
			t.Errorf("the CDN on another port received Authorization %q", a)
		}
	}
}
