package emulator

import "strings"

// SageMaker tags: AddTags, ListTags and DeleteTags on the ARNs of the emulator's models, endpoint
// configurations and endpoints ("You can add tags to notebook instances, training jobs, ... models, ...,
// endpoint configurations, and endpoints.", AddTags, SageMaker API reference). The service model checks the
// shapes first (validateInput): ResourceArn at most 256 characters matching
// "arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:.+", a key 1–128 and a value 0–256 characters of
// [\p{L}\p{Z}\p{N}_.:/=+\-@], at most 50 tags in one AddTags (TagList) and 1–50 keys in one DeleteTags
// (TagKeyList), ListTags MaxResults at least 50. The rest is checked here:
//
//   - a resource the emulator does not hold: ValidationException "Resource does not exist.", the wording
//     `aws sagemaker list-tags` answered for a missing resource (aws/sagemaker-python-sdk#4304); the API
//     reference lists no operation-specific error for the three operations;
//   - a key with the "aws:" prefix, in any case, in AddTags or DeleteTags: ValidationException "System prefix
//     'aws:' reserved for AWS usage in tag key: <key>", the wording SageMaker answered DeleteTags with
//     (aws/sagemaker-python-sdk#1301); "Don't use aws: ... as a prefix for either keys or values, as it is
//     reserved for AWS use. You can't edit or delete tag keys or values with this prefix." (AWS tag restrictions);
//   - more than 50 tags on one resource after an AddTags ("Maximum number of tags per resource – 50", AWS tag
//     restrictions): ValidationException, wording the emulator's;
//   - one key twice in one AddTags ("Tag keys must be unique per resource.", Tag): ValidationException,
//     wording the emulator's (AWS documents no answer).
//
// AddTags "Adds or overwrites": a key already on the resource gets the new value. DeleteTags ignores a key the
// resource does not have. ListTags returns every tag in one page (at most 50 fit the smallest MaxResults), so
// the emulator never issues a NextToken and refuses one.

// maxTagsPerResource is AWS's "Maximum number of tags per resource – 50".
const maxTagsPerResource = 50

// tagged is a SageMaker resource that holds tags.
type tagged interface{ tags() *[]tagRec }

func (m *modelRec) tags() *[]tagRec          { return &m.Tags }
func (c *endpointConfigRec) tags() *[]tagRec { return &c.Tags }
func (ep *endpointRec) tags() *[]tagRec      { return &ep.Tags }

// taggedLocked finds the resource whose ARN is arn, as DescribeModel, DescribeEndpointConfig and
// DescribeEndpoint show it; e.mu must be held.
func (e *Emulator) taggedLocked(arn string) (tagged, *apiError) {
	for _, ep := range e.st.Endpoints {
		if ep.Arn == arn {
			return ep, nil
		}
	}
	for _, c := range e.st.EndpointConfigs {
		if c.Arn == arn {
			return c, nil
		}
	}
	for _, m := range e.st.Models {
		if m.Arn == arn {
			return m, nil
		}
	}
	return nil, validation("Resource does not exist.")
}

// reservedTagKey answers a key with the aws: prefix (any case).
func reservedTagKey(key string) *apiError {
	if len(key) >= 4 && strings.EqualFold(key[:4], "aws:") {
		return validation("System prefix 'aws:' reserved for AWS usage in tag key: %s", key)
	}
	return nil
}

func (e *Emulator) addTags(dec decoder) (any, *apiError) {
	var in struct {
		ResourceArn string
		Tags        []tagRec
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, t := range in.Tags {
		if err := reservedTagKey(t.Key); err != nil {
			return nil, err
		}
		if seen[t.Key] {
			return nil, validation("Tag key %s is given twice: tag keys must be unique per resource.", t.Key)
		}
		seen[t.Key] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.taggedLocked(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	have := *r.tags()
	merged := append([]tagRec(nil), have...)
	for _, t := range in.Tags {
		i := tagIndex(merged, t.Key)
		if i >= 0 {
			merged[i].Value = t.Value
			continue
		}
		merged = append(merged, t)
	}
	if len(merged) > maxTagsPerResource {
		return nil, validation("Resource %s would have %d tags: a resource can have at most %d tags (it has %d).", in.ResourceArn, len(merged), maxTagsPerResource, len(have))
	}
	*r.tags() = merged
	e.saveLocked()
	return map[string]any{"Tags": tagList(in.Tags)}, nil
}

func (e *Emulator) listTags(dec decoder) (any, *apiError) {
	var in struct {
		ResourceArn string
		NextToken   string
		MaxResults  *int
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if in.NextToken != "" {
		return nil, validation("Invalid NextToken: the emulator returns every tag of a resource in one page and never issues one.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.taggedLocked(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Tags": tagList(*r.tags())}, nil
}

func (e *Emulator) deleteTags(dec decoder) (any, *apiError) {
	var in struct {
		ResourceArn string
		TagKeys     []string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	for _, k := range in.TagKeys {
		if err := reservedTagKey(k); err != nil {
			return nil, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.taggedLocked(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	kept := make([]tagRec, 0, len(*r.tags()))
	for _, t := range *r.tags() {
		if !containsString(in.TagKeys, t.Key) {
			kept = append(kept, t)
		}
	}
	if len(kept) != len(*r.tags()) {
		*r.tags() = kept
		e.saveLocked()
	}
	return map[string]any{}, nil
}

func tagIndex(tags []tagRec, key string) int {
	for i, t := range tags {
		if t.Key == key {
			return i
		}
	}
	return -1
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tagList is the Tags member of an answer: an empty list, never null.
func tagList(tags []tagRec) []tagRec {
	if tags == nil {
		return []tagRec{}
	}
	return tags
}
