package emulator_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// TestConformanceDescribeLogGroups: DescribeLogGroups is implemented and paginated as
// DescribeLogStreams is. CloudWatch Logs API reference (botocore's logs model): "The results are ASCII-sorted
// by log group name."; limit: "The maximum number of items returned. If you don't specify a value, the default
// is up to 50 items." (1..50); nextToken: "The token for the next set of items to return. (You received this
// token from a previous call.)"; logGroupNamePrefix: "logGroupNamePrefix and logGroupNamePattern are mutually
// exclusive. Only one of these parameters can be passed."; logGroupNamePattern: "a case-sensitive substring
// search".
func TestConformanceDescribeLogGroups(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.Clients
	ctx := ctxFor(t, 60*time.Second)
	names := []string{emulator.LogGroup("speech-c"), emulator.LogGroup("speech-a"), emulator.LogGroup("speech-b")}
	for _, g := range names {
		r.AppendLog(g, "AllTraffic/i-00001", time.Now(), "hello")
	}
	list := func(in *cloudwatchlogs.DescribeLogGroupsInput) ([]string, *string, error) {
		out, err := c.Logs.DescribeLogGroups(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		var got []string
		for _, g := range out.LogGroups {
			if aws.ToString(g.LogGroupArn) == "" || aws.ToInt64(g.CreationTime) == 0 {
				t.Errorf("log group %+v: want its logGroupArn and creationTime", g)
			}
			got = append(got, aws.ToString(g.LogGroupName))
		}
		return got, out.NextToken, nil
	}
	// Pages of 2: a, b with a token, then c without one.
	page1, token, err := list(&cloudwatchlogs.DescribeLogGroupsInput{Limit: aws.Int32(2)})
	if err != nil || len(page1) != 2 || page1[0] != names[1] || page1[1] != names[2] || token == nil {
		t.Fatalf("first page: %v, token %v, %v; want [a b] and a nextToken", page1, token, err)
	}
	page2, token2, err := list(&cloudwatchlogs.DescribeLogGroupsInput{Limit: aws.Int32(2), NextToken: token})
	if err != nil || len(page2) != 1 || page2[0] != names[0] || token2 != nil {
		t.Fatalf("second page: %v, token %v, %v; want [c] and no nextToken", page2, token2, err)
	}
	// The SDK's paginator follows the tokens through every group.
	var all []string
	for p := cloudwatchlogs.NewDescribeLogGroupsPaginator(c.Logs, &cloudwatchlogs.DescribeLogGroupsInput{Limit: aws.Int32(1)}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("paginator: %v", err)
		}
		for _, g := range out.LogGroups {
			all = append(all, aws.ToString(g.LogGroupName))
		}
	}
	if len(all) != 3 {
		t.Errorf("paginator listed %v, want the 3 groups", all)
	}
	if got, _, err := list(&cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(emulator.LogGroup("speech-b"))}); err != nil || len(got) != 1 {
		t.Errorf("prefix: %v, %v", got, err)
	}
	if got, _, err := list(&cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePattern: aws.String("speech-")}); err != nil || len(got) != 3 {
		t.Errorf("pattern: %v, %v", got, err)
	}
	for what, in := range map[string]*cloudwatchlogs.DescribeLogGroupsInput{
		"prefix and pattern":              {LogGroupNamePrefix: aws.String("/aws"), LogGroupNamePattern: aws.String("speech")},
		"limit 51 (DescribeLimit max 50)": {Limit: aws.Int32(51)},
		"a token not issued":              {NextToken: aws.String("bogus")},
		"a token for another filter":      {NextToken: token, LogGroupNamePrefix: aws.String("/aws")},
	} {
		if _, _, err := list(in); apiCode(err) != "InvalidParameterException" {
			t.Errorf("%s: %v, want InvalidParameterException", what, err)
		}
	}

	// The AWS CLI pages through them with the emulator's own tokens.
	stdout, stderr, code := awsCLI(ctx, t, r, "logs", "describe-log-groups", "--page-size", "1", "--output", "json")
	if code != 0 {
		t.Fatalf("aws logs describe-log-groups: exit %d: %s", code, stderr)
	}
	var got struct{ LogGroups []json.RawMessage }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got.LogGroups) != 3 {
		t.Errorf("aws logs describe-log-groups --page-size 1: %d groups (%v), want 3", len(got.LogGroups), err)
	}
}
