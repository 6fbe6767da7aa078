package emulator

//go:generate go run ./internal/servicemodelgen -out servicemodel_gen.go

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Service-model validation. Every AWS service checks a request against its API model before anything else:
// required members, enum value sets, numeric ranges, length bounds and patterns, and answers a violation with
// its validation error and the model's wording ("1 validation error detected: Value 'x' at 'member' failed to
// satisfy constraint: Member must ..."). servicemodel_gen.go holds the input shapes of every operation the
// emulator implements, generated from botocore's JSON service models (`go generate ./emulator`); this file
// applies them. The emulator's own checks (what it supports, what exists) come after.

// serviceModel is one service's part of the table: the input shape of each implemented operation and every
// shape those reach.
type serviceModel struct {
	Name   string
	Inputs map[string]string
	Shapes map[string]*modelShape
}

// modelShape is one shape of a service model with its constraints.
type modelShape struct {
	Type     string
	Required []string
	Members  map[string]modelMember
	Member   string
	Key      string
	Value    string
	Min, Max *float64
	// Pattern is the model's pattern; GoPattern the same, anchored on the whole value, in Go's syntax.
	Pattern, GoPattern string
	Enum               []string
}

// modelMember is a member of a structure: its shape and, for restJson1 members outside the body, where it
// travels (header, uri, querystring) and under what name.
type modelMember struct {
	Shape, Location, LocationName string
}

func bound(v float64) *float64 { return &v }

// validationCodes are the error codes each service answers a model violation with.
var validationCodes = map[string]string{
	"SageMaker":                     "ValidationException",
	"AnyScaleFrontendService":       "ValidationException",
	"GraniteServiceVersion20100801": "ValidationError",
	"Logs_20140328":                 "InvalidParameterException",
	"SageMakerRuntime":              "ValidationError",
}

// LocalInstanceType is the instance type of the emulator's own instances: a container process on this host,
// sharing its cores, memory and (no) GPU with every other instance. It is an emulator extension of SageMaker's
// ProductionVariantInstanceType enum, accepted beside the model's real types so that a local run records that
// it ran locally (the tools' models.LocalInstanceType); a real type (ml.g5.xlarge, ...) is accepted too and
// runs the same local process, with that type's instance-type profile (InstanceTypeProfileFor). See the
// README's timing profile and instance-type profiles for how local instances differ.
const LocalInstanceType = "local"

// enumExtensions are the values the emulator accepts beyond a model enum, by service and shape.
var enumExtensions = map[string]map[string][]string{
	"SageMaker": {"ProductionVariantInstanceType": {LocalInstanceType}},
}

var patternCache sync.Map // GoPattern → *regexp.Regexp

// validateInput checks the decoded request v (as encoding/json decodes into any) of the service's operation
// against the operation's input shape; nil when it passes or the table has no entry for it.
func validateInput(service, op string, v any) *apiError {
	m := serviceModels[service]
	if m == nil {
		return nil
	}
	in := m.Inputs[op]
	if in == "" {
		return nil
	}
	var problems []string
	m.check(in, "", v, enumExtensions[service], &problems)
	if len(problems) == 0 {
		return nil
	}
	noun := "error"
	if len(problems) > 1 {
		noun = "errors"
	}
	return errorf(validationCodes[service], http.StatusBadRequest, "%d validation %s detected: %s", len(problems), noun, strings.Join(problems, "; "))
}

// memberPath is how AWS's validation messages name a member: lower camel case, dotted, a list element as
// <list>.<n>.member (n from 1).
func memberPath(parent, name string) string {
	r, size := utf8.DecodeRuneInString(name)
	name = strings.ToLower(string(r)) + name[size:]
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// check appends a problem per constraint v breaks at path, recursively.
func (m *serviceModel) check(shapeName, path string, v any, ext map[string][]string, problems *[]string) {
	sh := m.Shapes[shapeName]
	if sh == nil || v == nil {
		return
	}
	fail := func(value any, constraint string) {
		*problems = append(*problems, fmt.Sprintf("Value %s at '%s' failed to satisfy constraint: Member must %s", quoteValue(value), path, constraint))
	}
	switch sh.Type {
	case "structure":
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, r := range sh.Required {
			if x, ok := obj[r]; !ok || x == nil {
				*problems = append(*problems, fmt.Sprintf("Value null at '%s' failed to satisfy constraint: Member must not be null", memberPath(path, r)))
			}
		}
		names := make([]string, 0, len(sh.Members))
		for n := range sh.Members {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if x, ok := obj[n]; ok {
				m.check(sh.Members[n].Shape, memberPath(path, n), x, ext, problems)
			}
		}
	case "list":
		list, ok := v.([]any)
		if !ok {
			return
		}
		m.checkSize(sh, float64(len(list)), list, fail)
		for i, x := range list {
			m.check(sh.Member, fmt.Sprintf("%s.%d.member", path, i+1), x, ext, problems)
		}
	case "map":
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		m.checkSize(sh, float64(len(obj)), obj, fail)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			m.check(sh.Key, path, k, ext, problems)
			m.check(sh.Value, path+"."+k, obj[k], ext, problems)
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return
		}
		if len(sh.Enum) > 0 && !slices.Contains(sh.Enum, s) && !slices.Contains(ext[shapeName], s) {
			fail(s, "satisfy enum value set: ["+strings.Join(sh.Enum, ", ")+"]")
			return
		}
		m.checkSize(sh, float64(utf8.RuneCountInString(s)), s, fail)
		if sh.GoPattern != "" && !compiled(sh.GoPattern).MatchString(s) {
			fail(s, "satisfy regular expression pattern: "+sh.Pattern)
		}
	case "integer", "long", "float", "double":
		f, ok := v.(float64)
		if !ok {
			return
		}
		if sh.Type == "integer" || sh.Type == "long" {
			if f != math.Trunc(f) {
				return
			}
			// The types have ranges of their own (Smithy's simple types, smithy.io/2.0/spec/simple-types.html):
			// "An integer is a 32-bit signed integer ranging from -2^31 to (2^31)-1 (inclusive)." and "A long is
			// a 64-bit signed integer ranging from -2^63 to (2^63)-1 (inclusive)." A value outside them is no
			// value of the member, whatever the model's min and max leave open (RegisterScalableTarget's
			// ResourceCapacity, PutMetricAlarm's Period and EvaluationPeriods have no max).
			lo, hi, hiText := float64(math.MinInt32), float64(math.MaxInt32), strconv.Itoa(math.MaxInt32)
			if sh.Type == "long" {
				lo, hi, hiText = math.MinInt64, math.MaxInt64, strconv.FormatInt(math.MaxInt64, 10)
			}
			if f < lo {
				fail(f, "have value greater than or equal to "+num(lo))
				return
			}
			if f > hi {
				fail(f, "have value less than or equal to "+hiText)
				return
			}
		}
		switch {
		case sh.Min != nil && sh.Max != nil && (f < *sh.Min || f > *sh.Max):
			if f < *sh.Min {
				fail(f, "have value greater than or equal to "+num(*sh.Min))
			} else {
				fail(f, "have value less than or equal to "+num(*sh.Max))
			}
		case sh.Min != nil && f < *sh.Min:
			fail(f, "have value greater than or equal to "+num(*sh.Min))
		case sh.Max != nil && f > *sh.Max:
			fail(f, "have value less than or equal to "+num(*sh.Max))
		}
	case "blob":
		s, ok := v.(string)
		if !ok {
			return
		}
		// A blob travels base64-encoded in JSON: its length is the decoded length.
		m.checkSize(sh, float64(len(s)*3/4), nil, fail)
	}
}

// checkSize checks a length (string, list, map) against the shape's min and max.
func (m *serviceModel) checkSize(sh *modelShape, n float64, value any, fail func(any, string)) {
	if sh.Min != nil && n < *sh.Min {
		fail(value, "have length greater than or equal to "+num(*sh.Min))
	}
	if sh.Max != nil && n > *sh.Max {
		fail(value, "have length less than or equal to "+num(*sh.Max))
	}
}

// quoteValue renders a value as AWS's messages do: 'text', a number, or the element count of a collection.
func quoteValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if utf8.RuneCountInString(x) > 256 {
			r := []rune(x)
			x = string(r[:256]) + "..."
		}
		return "'" + x + "'"
	case float64:
		return "'" + num(x) + "'"
	case []any:
		return fmt.Sprintf("'[%d items]'", len(x))
	case map[string]any:
		return fmt.Sprintf("'{%d entries}'", len(x))
	}
	return fmt.Sprintf("'%v'", v)
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func compiled(p string) *regexp.Regexp {
	if re, ok := patternCache.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	patternCache.Store(p, re)
	return re
}
