package modelsync_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/speech-infra/speech-infra/modelsync"
)

const bucket = "weights"

// countingS3 is the real aws-sdk-go-v2 client, recording the size of every part and object body it sends.
type countingS3 struct {
	*s3.Client
	mu       sync.Mutex
	maxPart  int64
	parts    int
	puts     []string
	aborted  int
	complete int
}

func (c *countingS3) UploadPart(ctx context.Context, in *s3.UploadPartInput, o ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	c.mu.Lock()
	c.parts++
	c.maxPart = max(c.maxPart, aws.ToInt64(in.ContentLength))
	c.mu.Unlock()
	return c.Client.UploadPart(ctx, in, o...)
}

func (c *countingS3) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.mu.Lock()
	c.puts = append(c.puts, aws.ToString(in.Key))
	c.mu.Unlock()
	return c.Client.PutObject(ctx, in, o...)
}

func (c *countingS3) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, o ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	c.mu.Lock()
	c.aborted++
	c.mu.Unlock()
	return c.Client.AbortMultipartUpload(ctx, in, o...)
}

func (c *countingS3) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	c.mu.Lock()
	c.complete++
	c.mu.Unlock()
	return c.Client.CompleteMultipartUpload(ctx, in, o...)
}

// newS3 starts gofakes3 on loopback and returns the real SDK client for it, with the bucket created.
func newS3(t *testing.T) *countingS3 {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	cl := s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	})
	if _, err := cl.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return &countingS3{Client: cl}
}

func getObject(t *testing.T, c *countingS3, key string) ([]byte, map[string]string, bool) {
	t.Helper()
	out, err := c.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var nsk interface{ ErrorCode() string }
		if errors.As(err, &nsk) && nsk.ErrorCode() == "NoSuchKey" {
			return nil, nil, false
		}
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b, out.Metadata, true
}

func (h *fakeHub) source() modelsync.Source {
	return modelsync.Source{Endpoint: h.endpoint(), Repo: h.repo, Revision: h.rev, Patterns: patterns}
}

func testOptions(t *testing.T) modelsync.Options {
	return modelsync.Options{Logf: t.Logf, Deadline: time.Now().Add(2 * time.Minute), StallTimeout: 5 * time.Second}
}

var selected = []string{"config.json", "onnx/model.onnx", "tokenizer.json", "voices/af.bin", "voices/bf.bin"}

func TestSyncS3HappyPathStreamsInPartsAndRerunSkips(t *testing.T) {
	// GIVEN a fake Hub and gofakes3, and 5 MiB parts for an 11 MiB file
	h := newFakeHub(t)
	c := newS3(t)
	prefix := modelsync.ObjectPrefix("tiny", h.rev)
	dst := &modelsync.S3{Client: c, Bucket: bucket, Prefix: prefix, PartSize: modelsync.MinPartSize}

	// WHEN the sync runs
	res, err := modelsync.Sync(context.Background(), h.source(), dst, testOptions(t))

	// THEN every selected file is in the bucket, byte for byte, with its checksum recorded
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if !res.Done || !reflect.DeepEqual(res.Uploaded, selected) || len(res.Skipped) != 0 {
		t.Fatalf("result = %+v, want done with %v uploaded", res, selected)
	}
	for _, p := range selected {
		b, meta, ok := getObject(t, c, prefix+p)
		if !ok || !bytes.Equal(b, h.files[p]) {
			t.Errorf("%s: object missing or differs (ok %v, %d bytes, want %d)", p, ok, len(b), len(h.files[p]))
		}
		if meta[modelsync.MetaSHA256] != sha256Hex(h.files[p]) {
			t.Errorf("%s: x-amz-meta-sha256 = %q, want %s", p, meta[modelsync.MetaSHA256], sha256Hex(h.files[p]))
		}
	}
	for _, p := range []string{"README.md", "onnx/model_q.onnx"} {
		if _, _, ok := getObject(t, c, prefix+p); ok {
			t.Errorf("%s was not selected but is in the bucket", p)
		}
	}
	// ... the large file went in bounded parts, never as one body
	big := int64(len(h.files["onnx/model.onnx"]))
	if c.parts < 3 || c.maxPart > modelsync.MinPartSize || c.complete != 1 {
		t.Errorf("parts = %d, largest = %d, completed uploads = %d: want >= 3 parts of at most %d bytes for a %d-byte file, one completed upload", c.parts, c.maxPart, c.complete, modelsync.MinPartSize, big)
	}
	for _, k := range c.puts {
		if strings.HasSuffix(k, "model.onnx") {
			t.Errorf("the large file was sent with one PutObject")
		}
	}
	// ... and manifest.json lists every file with size and sha256, repo and revision
	mb, _, ok := getObject(t, c, prefix+modelsync.ManifestName)
	if !ok {
		t.Fatal("no manifest.json in the bucket")
	}
	want := wantManifest(h)
	if string(mb) != string(want) {
		t.Errorf("manifest.json =\n%s\nwant\n%s", mb, want)
	}

	// WHEN it runs again
	h.resetFetches()
	res, err = modelsync.Sync(context.Background(), h.source(), dst, testOptions(t))

	// THEN nothing is fetched again and the manifest is the same
	if err != nil || !res.Done || len(res.Uploaded) != 0 || !reflect.DeepEqual(res.Skipped, selected) {
		t.Fatalf("rerun: result %+v, err %v: want every file skipped", res, err)
	}
	for _, p := range selected {
		if n := h.fetched(p); n != 0 {
			t.Errorf("rerun fetched %s %d times", p, n)
		}
	}
	if mb2, _, _ := getObject(t, c, prefix+modelsync.ManifestName); string(mb2) != string(want) {
		t.Errorf("rerun changed manifest.json")
	}
}

// wantManifest is the manifest the fake repository must produce.
func wantManifest(h *fakeHub) []byte {
	m := modelsync.Manifest{Repo: h.repo, Revision: h.rev}
	for _, p := range selected {
		m.Files = append(m.Files, modelsync.Entry{Path: p, Size: int64(len(h.files[p])), SHA256: sha256Hex(h.files[p])})
	}
	b, _ := m.Encode()
	return b
}

func TestSyncDirHappyPathVerifiesAsTheContainer(t *testing.T) {
	h := newFakeHub(t)
	dir := filepath.Join(t.TempDir(), "model")
	res, err := modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: dir}, testOptions(t))
	if err != nil || !res.Done {
		t.Fatalf("Sync: %+v, %v", res, err)
	}
	if _, err := modelsync.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
	for _, p := range selected {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || !bytes.Equal(b, h.files[p]) {
			t.Errorf("%s: %v or content differs", p, err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, modelsync.ManifestName))
	if string(got) != string(wantManifest(h)) {
		t.Errorf("manifest differs:\n%s", got)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*partial"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	// A second run reads what is there and fetches nothing.
	h.resetFetches()
	res, err = modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: dir}, testOptions(t))
	if err != nil || !reflect.DeepEqual(res.Skipped, selected) {
		t.Fatalf("rerun: %+v, %v", res, err)
	}
	// A file changed on disk is not trusted: it is fetched again.
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"sample_rate": 16000}`+"\n"), 0o644)
	res, err = modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: dir}, testOptions(t))
	if err != nil || !reflect.DeepEqual(res.Uploaded, []string{"config.json"}) {
		t.Fatalf("after tampering: %+v, %v: want config.json fetched again", res, err)
	}
}
