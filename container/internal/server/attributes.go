package server

import (
	"fmt"
	"strconv"
	"strings"
)

// ShieldAttribute is the custom attribute (SageMaker's CustomAttributes, forwarded verbatim to the container as
// X-Amzn-SageMaker-Custom-Attributes) with which one request asks to be admitted within a queue depth of its own:
// queue-max-depth=N. The gate admits it only while fewer than N requests (and fewer than QUEUE_MAX_DEPTH, when
// set) are admitted (Gate.AcquireWithin), so a request can tighten the shield for itself and never widen it.
// tts-bench qmax's rate staircase sends it with the catalog's depth on an endpoint in measurement configuration
// (QUEUE_MAX_DEPTH=0), so that its open-loop steps shed as the deployed shield would (docs/design.md, "Queue gate").
const ShieldAttribute = "queue-max-depth"

// maxShieldAttribute bounds the attribute's value: a depth no container admits anyway.
const maxShieldAttribute = 1 << 20

// shieldLimit reads ShieldAttribute from a request's custom attributes: comma- or semicolon-separated
// key=value pairs; other keys are ignored. It returns 0 when the attribute is absent, and an error naming the
// attribute and the fix when it is present but not a depth from 1 to maxShieldAttribute.
func shieldLimit(attrs string) (int, error) {
	if attrs == "" {
		return 0, nil
	}
	limit := 0
	for _, kv := range strings.FieldsFunc(attrs, func(r rune) bool { return r == ',' || r == ';' }) {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if k != ShieldAttribute {
			continue
		}
		if limit != 0 {
			return 0, fmt.Errorf("custom attribute %s is given twice: give it once", ShieldAttribute)
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > maxShieldAttribute {
			return 0, fmt.Errorf("custom attribute %s=%q is not a queue depth: give a whole number from 1 to %d (X-Amzn-SageMaker-Custom-Attributes: %s=50)", ShieldAttribute, v, maxShieldAttribute, ShieldAttribute)
		}
		limit = n
	}
	return limit, nil
}
