package modelsync

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3API is the part of the aws-sdk-go-v2 S3 client the S3 destination uses; *s3.Client satisfies it.
type S3API interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

// Part sizes of the S3 destination. S3 requires at least 5 MiB for every part but the last and allows
// at most 10,000 parts, so the default (64 MiB) covers files up to 625 GiB.
const (
	MinPartSize     = 5 << 20
	DefaultPartSize = 64 << 20
	maxParts        = 10_000
)

// Object metadata the S3 destination sets on every object it writes, after (single part) or before (multipart,
// LFS files only) verification; a re-run trusts an object whose metadata and size match the tree.
const (
	// MetaSHA256 is the hex SHA-256 of the object's content (x-amz-meta-sha256).
	MetaSHA256 = "sha256"
	// MetaGitOID is the git blob id of a non-LFS file (x-amz-meta-git-oid).
	MetaGitOID = "git-oid"
)

// S3 is a destination under s3://Bucket/Prefix. A file is uploaded in parts of PartSize bytes with S3's
// SHA-256 additional checksum on every part (S3 rejects a part whose bytes differ from what was hashed),
// holding one part in memory at a time; the object becomes visible only when CompleteMultipartUpload runs,
// after the whole file was verified, and the upload is aborted otherwise. A file no larger than one part is
// verified first and then sent with one PutObject carrying its SHA-256 checksum.
type S3 struct {
	// Client is the S3 client.
	Client S3API
	// Bucket is the bucket name.
	Bucket string
	// Prefix is the key prefix, e.g. models/kokoro-82m/<revision>/ (ObjectPrefix builds it); it must end with "/".
	Prefix string
	// PartSize is the multipart part size, at least MinPartSize; 0 means DefaultPartSize.
	PartSize int64
}

// ObjectPrefix is the key prefix of a model's files: models/<model>/<revision>/ (the catalog's WeightsPrefix).
func ObjectPrefix(model, revision string) string { return "models/" + model + "/" + revision + "/" }

// String implements Destination.
func (d *S3) String() string { return "s3://" + d.Bucket + "/" + d.Prefix }

func (d *S3) check() error {
	if d.Client == nil || d.Bucket == "" {
		return errors.New("S3 destination needs a client and a bucket")
	}
	if d.Prefix != "" && !strings.HasSuffix(d.Prefix, "/") || strings.HasPrefix(d.Prefix, "/") {
		return fmt.Errorf("S3 prefix %q must be relative and end with /", d.Prefix)
	}
	if d.PartSize != 0 && d.PartSize < MinPartSize {
		return fmt.Errorf("S3 part size %d is below S3's minimum of %d bytes (5 MiB)", d.PartSize, MinPartSize)
	}
	return nil
}

func (d *S3) partSize(size int64) int64 {
	ps := d.PartSize
	if ps == 0 {
		ps = DefaultPartSize
	}
	// Grow the part for a file that would need more than S3's 10,000 parts.
	for size/ps >= maxParts {
		ps *= 2
	}
	return ps
}

// Lookup implements Destination: the object is present when its size and the metadata this destination
// sets match the tree (x-amz-meta-sha256 equal to the LFS SHA-256; for a non-LFS file x-amz-meta-git-oid
// equal to the tree's blob id and a recorded SHA-256).
func (d *S3) Lookup(ctx context.Context, f File) (string, bool, error) {
	if err := d.check(); err != nil {
		return "", false, err
	}
	out, err := d.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: aws.String(d.Prefix + f.Path)})
	if err != nil {
		if isNotFound(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("HeadObject %s%s: %w", d, f.Path, err)
	}
	if aws.ToInt64(out.ContentLength) != f.Size {
		return "", false, nil
	}
	sum := strings.ToLower(out.Metadata[MetaSHA256])
	if !isHex(sum, 64) {
		return "", false, nil
	}
	if f.LFS() {
		return sum, sum == f.SHA256, nil
	}
	return sum, strings.EqualFold(out.Metadata[MetaGitOID], f.GitOID), nil
}

func isNotFound(err error) bool {
	var nf *types.NotFound
	var nsk *types.NoSuchKey
	var re *awshttp.ResponseError
	return errors.As(err, &nf) || errors.As(err, &nsk) || (errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound)
}

// Put implements Destination.
func (d *S3) Put(ctx context.Context, f File, body io.Reader, verify func() (string, error)) (err error) {
	if err := d.check(); err != nil {
		return err
	}
	key := d.Prefix + f.Path
	defer func() {
		var mm *MismatchError
		if errors.As(err, &mm) {
			// An older object at the key was rejected by Lookup; it must not stay where the endpoint reads.
			cctx, cancel := cleanupContext()
			defer cancel()
			if _, derr := d.Client.DeleteObject(cctx, &s3.DeleteObjectInput{Bucket: &d.Bucket, Key: &key}); derr != nil && !isNotFound(derr) {
				err = fmt.Errorf("%w (and deleting the older object s3://%s/%s failed: %v: delete it by hand)", err, d.Bucket, key, derr)
			}
		}
	}()
	buf := make([]byte, d.partSize(f.Size))
	n, rerr := io.ReadFull(body, buf)
	if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
		// The whole file fits in one part: verify, then put it with its checksum.
		sum, err := verify()
		if err != nil {
			return err
		}
		raw := sha256.Sum256(buf[:n])
		_, err = d.Client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: &d.Bucket, Key: &key, Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
			ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(raw[:])),
			Metadata:       d.metadata(f, sum),
		})
		if err != nil {
			return fmt.Errorf("PutObject %s: %w", key, err)
		}
		return nil
	}
	if rerr != nil {
		return fmt.Errorf("read %s: %w", f.Path, rerr)
	}
	return d.multipart(ctx, f, key, buf, body, verify)
}

// metadata is what the object records for Lookup; sum is "" when not known before the upload.
func (d *S3) metadata(f File, sum string) map[string]string {
	m := map[string]string{}
	if sum != "" {
		m[MetaSHA256] = sum
	}
	if !f.LFS() {
		m[MetaGitOID] = f.GitOID
	}
	return m
}

// multipart uploads a file larger than one part; buf holds its first part, full.
func (d *S3) multipart(ctx context.Context, f File, key string, buf []byte, body io.Reader, verify func() (string, error)) (err error) {
	// A non-LFS file larger than a part (the Hub keeps files above 10 MiB in LFS, so this is rare) gets no
	// x-amz-meta-sha256: its SHA-256 is known only at the end. A re-run then fetches it again.
	created, err := d.Client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &d.Bucket, Key: &key, ChecksumAlgorithm: types.ChecksumAlgorithmSha256, Metadata: d.metadata(f, f.SHA256),
	})
	if err != nil {
		return fmt.Errorf("CreateMultipartUpload %s: %w", key, err)
	}
	id := created.UploadId
	defer func() {
		if err != nil {
			cctx, cancel := cleanupContext()
			defer cancel()
			if _, aerr := d.Client.AbortMultipartUpload(cctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &key, UploadId: id}); aerr != nil {
				err = fmt.Errorf("%w (and aborting multipart upload %s failed: %v: the bucket's lifecycle rule or `aws s3api abort-multipart-upload` removes it)", err, aws.ToString(id), aerr)
			}
		}
	}()
	var parts []types.CompletedPart
	n := len(buf)
	for num := int32(1); ; num++ {
		out, err := d.Client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &d.Bucket, Key: &key, UploadId: id, PartNumber: aws.Int32(num),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)), ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		})
		if err != nil {
			return fmt.Errorf("UploadPart %d of %s: %w", num, key, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag, ChecksumSHA256: out.ChecksumSHA256})
		var rerr error
		n, rerr = io.ReadFull(body, buf)
		if rerr == io.EOF {
			break
		}
		if rerr != nil && rerr != io.ErrUnexpectedEOF {
			return fmt.Errorf("read %s: %w", f.Path, rerr)
		}
		if rerr == io.ErrUnexpectedEOF {
			out, err := d.Client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket: &d.Bucket, Key: &key, UploadId: id, PartNumber: aws.Int32(num + 1),
				Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)), ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
			})
			if err != nil {
				return fmt.Errorf("UploadPart %d of %s: %w", num+1, key, err)
			}
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num + 1), ETag: out.ETag, ChecksumSHA256: out.ChecksumSHA256})
			break
		}
	}
	if _, err := verify(); err != nil {
		return err
	}
	if _, err := d.Client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &d.Bucket, Key: &key, UploadId: id, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return fmt.Errorf("CompleteMultipartUpload %s: %w", key, err)
	}
	return nil
}

// PutManifest implements Destination.
func (d *S3) PutManifest(ctx context.Context, data []byte) error {
	if err := d.check(); err != nil {
		return err
	}
	raw := sha256.Sum256(data)
	_, err := d.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &d.Bucket, Key: aws.String(d.Prefix + ManifestName), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))), ContentType: aws.String("application/json"),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(raw[:])),
	})
	return err
}

// cleanupContext bounds a cleanup call that must run even when the run's context has ended.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
