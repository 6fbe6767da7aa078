package emulator_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// TestConformanceTags (the measurement marker lives in an endpoint tag): SageMaker AddTags,
// ListTags and DeleteTags through the real SDK client, on the ARN DescribeEndpoint shows. Each case quotes the
// API reference sentence or the service-model constraint it checks; the tags survive a restart (state.json).
func TestConformanceTags(t *testing.T) {
	dir := t.TempDir()
	r := emulatortest.Start(t, emulatortest.StateDir(dir))
	c := r.Clients
	ctx := ctxFor(t, 60*time.Second)
	const name = "speech-tags"
	emulatortest.Endpoint(t, r, name)
	d, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	arn := d.EndpointArn
	list := func(c emulatortest.Clients) map[string]string {
		t.Helper()
		out, err := c.SageMaker.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: arn})
		if err != nil {
			t.Fatalf("ListTags: %v", err)
		}
		if out.NextToken != nil {
			t.Errorf("ListTags NextToken %q for %d tags, want none", aws.ToString(out.NextToken), len(out.Tags))
		}
		m := map[string]string{}
		for _, tg := range out.Tags {
			m[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
		}
		return m
	}
	add := func(tags ...smtypes.Tag) error {
		_, err := c.SageMaker.AddTags(ctx, &sagemaker.AddTagsInput{ResourceArn: arn, Tags: tags})
		return err
	}
	tag := func(k, v string) smtypes.Tag { return smtypes.Tag{Key: aws.String(k), Value: aws.String(v)} }

	// "Returns the tags for the specified SageMaker resource." (ListTags): none yet.
	if got := list(c); len(got) != 0 {
		t.Fatalf("a new endpoint's tags = %v, want none", got)
	}
	// "Adds or overwrites one or more tags for the specified SageMaker resource. ... endpoint configurations, and
	// endpoints." (AddTags); "Each tag consists of a key and an optional value." (an empty value: TagValue min 0).
	if err := add(tag("speech-infra:measurement", "run=a owner=u@h"), tag("empty", "")); err != nil {
		t.Fatalf("AddTags: %v", err)
	}
	if err := add(tag("speech-infra:measurement", "run=b owner=u@h")); err != nil {
		t.Fatalf("AddTags overwrite: %v", err)
	}
	if got := list(c); len(got) != 2 || got["speech-infra:measurement"] != "run=b owner=u@h" || got["empty"] != "" {
		t.Fatalf("tags after add and overwrite = %v", got)
	}
	// Endpoint configurations and models are taggable too; their tags are their own.
	cfg, err := c.SageMaker.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SageMaker.AddTags(ctx, &sagemaker.AddTagsInput{ResourceArn: cfg.EndpointConfigArn, Tags: []smtypes.Tag{tag("config", "1")}}); err != nil {
		t.Fatalf("AddTags on the endpoint config: %v", err)
	}
	if got := list(c); len(got) != 2 {
		t.Fatalf("the endpoint's tags after tagging its config = %v", got)
	}

	for _, tc := range []struct {
		name       string
		call       func() error
		code, text string
	}{
		// Tag.Key: TagKey, "min":1, "max":128.
		{"key of 129 characters", func() error { return add(tag(strings.Repeat("k", 129), "v")) },
			"ValidationException", "Member must have length less than or equal to 128"},
		{"empty key", func() error { return add(tag("", "v")) },
			"ValidationException", "Member must have length greater than or equal to 1"},
		// Tag.Value: TagValue, "min":0, "max":256.
		{"value of 257 characters", func() error { return add(tag("k", strings.Repeat("v", 257))) },
			"ValidationException", "Member must have length less than or equal to 256"},
		// TagValue "pattern":"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)": no braces or quotes.
		{"value outside the pattern", func() error { return add(tag("k", `{"run":"a"}`)) },
			"ValidationException", "Member must satisfy regular expression pattern"},
		// AddTagsInput.Tags: TagList, "max":50.
		{"51 tags in one call", func() error {
			var tags []smtypes.Tag
			for i := range 51 {
				tags = append(tags, tag(fmt.Sprint("k", i), "v"))
			}
			return add(tags...)
		}, "ValidationException", "Member must have length less than or equal to 50"},
		// "Maximum number of tags per resource – 50" (AWS tag restrictions): 2 present + 49 new.
		{"51 tags on the resource", func() error {
			var tags []smtypes.Tag
			for i := range 49 {
				tags = append(tags, tag(fmt.Sprint("k", i), "v"))
			}
			return add(tags...)
		}, "ValidationException", "at most 50 tags"},
		// "Tag keys must be unique per resource." (Tag.Key).
		{"one key twice", func() error { return add(tag("dup", "1"), tag("dup", "2")) },
			"ValidationException", "tag keys must be unique per resource"},
		// "Don't use aws: ... as a prefix for either keys or values, as it is reserved for AWS use." (AWS tag
		// restrictions); SageMaker's wording (aws/sagemaker-python-sdk#1301).
		{"aws: prefix", func() error { return add(tag("AWS:cloudformation:stack-name", "x")) },
			"ValidationException", "System prefix 'aws:' reserved for AWS usage in tag key: AWS:cloudformation:stack-name"},
		{"DeleteTags aws: prefix", func() error {
			_, err := c.SageMaker.DeleteTags(ctx, &sagemaker.DeleteTagsInput{ResourceArn: arn, TagKeys: []string{"aws:x"}})
			return err
		}, "ValidationException", "System prefix 'aws:' reserved"},
		// DeleteTagsInput.TagKeys: TagKeyList, "min":1.
		{"DeleteTags without keys", func() error {
			_, err := c.SageMaker.DeleteTags(ctx, &sagemaker.DeleteTagsInput{ResourceArn: arn, TagKeys: []string{}})
			return err
		}, "ValidationException", "at 'tagKeys' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		// ListTagsInput.MaxResults: ListTagsMaxResults, "min":50.
		{"ListTags MaxResults 49", func() error {
			_, err := c.SageMaker.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: arn, MaxResults: aws.Int32(49)})
			return err
		}, "ValidationException", "Value '49' at 'maxResults' failed to satisfy constraint: Member must have value greater than or equal to 50"},
		// ResourceArn "pattern":"arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:.+".
		{"not a SageMaker ARN", func() error {
			_, err := c.SageMaker.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: aws.String("arn:aws:s3:::bucket")})
			return err
		}, "ValidationException", "at 'resourceArn' failed to satisfy constraint: Member must satisfy regular expression pattern"},
		// A resource that does not exist: "Resource does not exist." (the AWS CLI's answer,
		// aws/sagemaker-python-sdk#4304; the API reference lists only the common errors).
		{"missing endpoint", func() error {
			_, err := c.SageMaker.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: aws.String(strings.Replace(aws.ToString(arn), name, "speech-nothing", 1))})
			return err
		}, "ValidationException", "Resource does not exist."},
		{"AddTags on a missing endpoint", func() error {
			_, err := c.SageMaker.AddTags(ctx, &sagemaker.AddTagsInput{ResourceArn: aws.String(strings.Replace(aws.ToString(arn), name, "speech-nothing", 1)), Tags: []smtypes.Tag{tag("k", "v")}})
			return err
		}, "ValidationException", "Resource does not exist."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tc.code || !strings.Contains(ae.ErrorMessage(), tc.text) {
				t.Fatalf("got %v; want %s saying %q", err, tc.code, tc.text)
			}
		})
	}
	// A refused call changes nothing.
	if got := list(c); len(got) != 2 {
		t.Fatalf("tags after the refused calls = %v, want the 2 added", got)
	}

	// The tags are kept in state.json: a restart in the same directory finds them.
	r.Stop()
	r2 := emulatortest.Start(t, emulatortest.StateDir(dir))
	if got := list(r2.Clients); got["speech-infra:measurement"] != "run=b owner=u@h" {
		t.Fatalf("tags after a restart = %v", got)
	}
	// "Deletes the specified tags from an SageMaker resource." (DeleteTags); a key the resource does not have is
	// ignored.
	if _, err := r2.SageMaker.DeleteTags(ctx, &sagemaker.DeleteTagsInput{ResourceArn: arn, TagKeys: []string{"speech-infra:measurement", "never-added"}}); err != nil {
		t.Fatalf("DeleteTags: %v", err)
	}
	if got := list(r2.Clients); len(got) != 1 || got["empty"] != "" {
		t.Fatalf("tags after DeleteTags = %v, want only empty", got)
	}
}
