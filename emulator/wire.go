package emulator

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/speech-infra/speech-infra/internal/strictjson"
)

// Content types of the awsJson protocols.
const (
	contentTypeJSON10 = "application/x-amz-json-1.0"
	contentTypeJSON11 = "application/x-amz-json-1.1"
)

// decoder decodes the request of one call into an operation's input struct.
type decoder func(v any) *apiError

// operation is one AWS operation, written once and served over whichever protocol carries it: the protocol
// decodes the request (dec) and encodes what the operation returns.
type operation func(e *Emulator, dec decoder) (any, *apiError)

// protocol is a wire protocol: how a request body is decoded and a result or an error is written.
type protocol struct {
	decode     func(body []byte, v any) *apiError
	write      func(w http.ResponseWriter, v any)
	writeError func(w http.ResponseWriter, e *apiError)
}

var (
	// awsJSON11 serves SageMaker, Application Auto Scaling and CloudWatch Logs.
	awsJSON11 = protocol{decode: decodeJSON, write: writeJSON, writeError: writeJSONError}
	// queryJSON10 is awsJson1_0 for CloudWatch, an awsQueryCompatible service (what botocore and the AWS CLI
	// v1 speak).
	queryJSON10 = protocol{
		decode:     decodeJSON,
		write:      func(w http.ResponseWriter, v any) { writeJSONAs(w, contentTypeJSON10, v) },
		writeError: writeQueryJSONError,
	}
	// rpcv2CBOR is Smithy RPCv2 CBOR for CloudWatch (what aws-sdk-go-v2 speaks).
	rpcv2CBOR = protocol{decode: decodeCBOR, write: writeCBOR, writeError: writeCBORError}
)

// requestIDHeader is the response header that carries the id AWS gives every request, in every protocol the
// emulator speaks (awsJson, restJson1, rpcv2Cbor): the SDKs report it as the request id of a result or an
// error (aws-sdk-go-v2: awsmiddleware.GetRequestIDMetadata, ResponseError.ServiceRequestID; botocore:
// ResponseMetadata.RequestId). None of these protocols carries the id in an error body; only awsQuery's XML
// does, and the emulator does not speak awsQuery.
const requestIDHeader = "x-amzn-RequestId"

// newRequestID returns a random version 4 UUID, the form of AWS's request ids.
func newRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on the platforms Go supports.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// setRequestID gives the response a new request id (requestIDHeader) and returns it. ServeHTTP calls it first
// for every request, so every answer carries one, errors and refusals included.
func setRequestID(w http.ResponseWriter) string {
	id := newRequestID()
	w.Header().Set(requestIDHeader, id)
	return id
}

// MaxControlPlaneBody is the largest control-plane request body the emulator reads (SageMaker, Application
// Auto Scaling, CloudWatch, CloudWatch Logs). The largest request AWS documents among them, a PutLogEvents
// batch, is about 1 MB; a larger body is refused whole, never parsed in part.
const MaxControlPlaneBody = 16 << 20

// serve reads the request body, runs op with the protocol's decoder and writes its result or error.
func (p protocol) serve(e *Emulator, w http.ResponseWriter, r *http.Request, op operation) {
	body, apiErr := readBody(w, r, MaxControlPlaneBody)
	if apiErr != nil {
		p.writeError(w, apiErr)
		return
	}
	out, apiErr := op(e, func(v any) *apiError { return p.decode(body, v) })
	if apiErr != nil {
		p.writeError(w, apiErr)
		return
	}
	p.write(w, out)
}

// readBody reads a whole request body of at most limit bytes. A larger body (by its Content-Length or as it
// arrives) is answered 413 RequestEntityTooLargeException and the connection closed after the answer, so
// the rest is never read; a body that does not arrive within the server's read timeout is answered 408.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apiError) {
	tooLarge := func(size string) *apiError {
		// The rest of the body stays unread: net/http closes the connection after this answer.
		w.Header().Set("Connection", "close")
		return errorf("RequestEntityTooLargeException", http.StatusRequestEntityTooLarge,
			"the request body is %s, more than the %d bytes (%d MiB) the emulator accepts for a control-plane call: send smaller requests (batch fewer items per call)",
			size, limit, limit>>20)
	}
	if r.ContentLength > limit {
		return nil, tooLarge(fmt.Sprintf("%d bytes", r.ContentLength))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var maxErr *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &maxErr):
		return nil, tooLarge("over the limit")
	case errors.As(err, &netErr) && netErr.Timeout():
		w.Header().Set("Connection", "close")
		return nil, errorf("RequestTimeoutException", http.StatusRequestTimeout,
			"the request body did not arrive within the emulator's read timeout: send the whole request at once")
	default:
		return nil, errorf("SerializationException", http.StatusBadRequest, "read the request body: %v", err)
	}
}

// apiError is an error in the AWS shape: a modeled error code, an HTTP status and a message.
type apiError struct {
	// Code is the error shape name, e.g. ValidationException.
	Code string
	// Status is the HTTP status code.
	Status int
	// Message is the human-readable message.
	Message string
	// Extra holds additional members of the error shape (e.g. OriginalStatusCode of ModelError).
	Extra map[string]any
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(code string, status int, format string, args ...any) *apiError {
	return &apiError{Code: code, Status: status, Message: fmt.Sprintf(format, args...)}
}

// epoch is a timestamp that travels as epoch seconds: a JSON number in the awsJson protocols and a CBOR tag 1
// in rpcv2Cbor.
type epoch struct{ time.Time }

func newEpoch(t time.Time) *epoch { return &epoch{t} }

// MarshalJSON writes fractional epoch seconds.
func (e epoch) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(e.UnixNano())/1e9, 'f', 3, 64)), nil
}

// UnmarshalJSON reads epoch seconds (a number) or an RFC 3339 string.
func (e *epoch) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339Nano, str)
		if err != nil {
			return fmt.Errorf("timestamp %q: %w", str, err)
		}
		e.Time = t
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("timestamp %s: %w", s, err)
	}
	sec, frac := math.Modf(f)
	e.Time = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	return nil
}

// decodeJSON decodes an awsJson request body into v; an empty body is an empty object. A key that appears twice
// in one object, or that differs from another member of a structure only in case, is refused
// (SerializationException naming it; strictjson.DuplicateKeysFor): encoding/json would keep the last one
// silently, so {"DesiredInstanceCount":1,"desiredinstancecount":1000} would say one thing to a reader and
// another to the emulator. The SDKs never send one.
func decodeJSON(body []byte, v any) *apiError {
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errorf("SerializationException", http.StatusBadRequest, "cannot parse the request body: %v", err)
	}
	if dups := strictjson.DuplicateKeysFor(body, reflect.TypeOf(v)); len(dups) > 0 {
		return errorf("SerializationException", http.StatusBadRequest, "cannot parse the request body: %s", strings.Join(dups, "; "))
	}
	return nil
}

// writeJSON writes an awsJson1_1 success response.
func writeJSON(w http.ResponseWriter, v any) { writeJSONAs(w, contentTypeJSON11, v) }

// writeJSONAs writes an awsJson success response with the given content type.
func writeJSONAs(w http.ResponseWriter, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeJSONError(w, errorf("InternalFailure", 500, "encode response: %v", err))
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// writeJSONError writes an error in the awsJson / restJson1 shape: X-Amzn-ErrorType header and a body with
// __type and message.
func writeJSONError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"__type": e.Code, "message": e.Message}
	for k, v := range e.Extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", contentTypeJSON11)
	w.Header().Set("X-Amzn-ErrorType", e.Code)
	w.WriteHeader(e.Status)
	w.Write(b)
}

// writeQueryJSONError writes a CloudWatch error in the awsJson1_0 shape: __type names the error shape and,
// CloudWatch being awsQueryCompatible, X-Amzn-Query-Error carries the query error code and fault that
// botocore reports as the error code.
func writeQueryJSONError(w http.ResponseWriter, e *apiError) {
	b, _ := json.Marshal(map[string]any{"__type": cloudwatchErrorType(e), "message": e.Message})
	w.Header().Set("Content-Type", contentTypeJSON10)
	w.Header().Set("X-Amzn-Query-Error", queryError(e))
	w.WriteHeader(e.Status)
	w.Write(b)
}

// cloudwatchErrorType is the shape id CloudWatch errors carry in __type.
func cloudwatchErrorType(e *apiError) string { return "com.amazonaws.cloudwatch#" + e.Code }

// queryError is the X-Amzn-Query-Error value of an awsQueryCompatible error: "<code>;<Sender|Receiver>".
func queryError(e *apiError) string {
	fault := "Sender"
	if e.Status >= 500 {
		fault = "Receiver"
	}
	return e.Code + ";" + fault
}

// cborToAny converts a decoded CBOR value into the value encoding/json would produce, with timestamps (tag 1)
// as epoch seconds, so that one set of request structs serves both protocols.
func cborToAny(v cbor.Value) (any, error) {
	switch x := v.(type) {
	case cbor.Uint:
		return float64(x), nil
	case cbor.NegInt:
		return -float64(x), nil
	case cbor.Float32:
		return float64(x), nil
	case cbor.Float64:
		return float64(x), nil
	case cbor.String:
		return string(x), nil
	case cbor.Slice:
		return base64.StdEncoding.EncodeToString(x), nil
	case cbor.Bool:
		return bool(x), nil
	case *cbor.Nil, *cbor.Undefined:
		return nil, nil
	case cbor.List:
		out := make([]any, 0, len(x))
		for _, e := range x {
			a, err := cborToAny(e)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, nil
	case cbor.Map:
		out := make(map[string]any, len(x))
		for k, e := range x {
			a, err := cborToAny(e)
			if err != nil {
				return nil, err
			}
			out[k] = a
		}
		return out, nil
	case *cbor.Tag:
		if x.ID == 1 {
			return cborToAny(x.Value)
		}
		return nil, fmt.Errorf("unsupported CBOR tag %d", x.ID)
	default:
		return nil, fmt.Errorf("unsupported CBOR value %T", v)
	}
}

// decodeCBOR decodes an rpcv2Cbor request body into v.
func decodeCBOR(body []byte, v any) *apiError {
	if len(body) == 0 {
		return nil
	}
	val, err := cbor.Decode(body)
	if err != nil {
		return errorf("SerializationException", http.StatusBadRequest, "cannot parse the CBOR request body: %v", err)
	}
	a, err := cborToAny(val)
	if err != nil {
		return errorf("SerializationException", http.StatusBadRequest, "cannot parse the CBOR request body: %v", err)
	}
	b, _ := json.Marshal(a)
	if err := json.Unmarshal(b, v); err != nil {
		return errorf("SerializationException", http.StatusBadRequest, "cannot parse the request body: %v", err)
	}
	return nil
}

var epochType = reflect.TypeOf(epoch{})

// toCBOR converts a response struct into a CBOR value: members named by their json tags, nil pointers, nil
// slices and omitempty zero values left out, timestamps (epoch) as tag 1 and float64 as doubles.
func toCBOR(v reflect.Value) (cbor.Value, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Type() == epochType {
		t := v.Interface().(epoch)
		return &cbor.Tag{ID: 1, Value: cbor.Float64(float64(t.UnixNano()) / 1e9)}, true
	}
	switch v.Kind() {
	case reflect.String:
		return cbor.String(v.String()), true
	case reflect.Bool:
		return cbor.Bool(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i := v.Int(); i < 0 {
			return cbor.NegInt(uint64(-i)), true
		} else {
			return cbor.Uint(uint64(i)), true
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return cbor.Uint(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return cbor.Float64(v.Float()), true
	case reflect.Slice:
		if v.IsNil() {
			return nil, false
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return cbor.Slice(v.Bytes()), true
		}
		l := cbor.List{}
		for i := 0; i < v.Len(); i++ {
			if e, ok := toCBOR(v.Index(i)); ok {
				l = append(l, e)
			}
		}
		return l, true
	case reflect.Map:
		if v.IsNil() {
			return nil, false
		}
		m := cbor.Map{}
		iter := v.MapRange()
		for iter.Next() {
			if e, ok := toCBOR(iter.Value()); ok {
				m[iter.Key().String()] = e
			}
		}
		return m, true
	case reflect.Struct:
		m := cbor.Map{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fv := v.Field(i)
			if strings.Contains(opts, "omitempty") && fv.IsZero() {
				continue
			}
			if e, ok := toCBOR(fv); ok {
				m[name] = e
			}
		}
		return m, true
	}
	return nil, false
}

// writeCBOR writes an rpcv2Cbor success response.
func writeCBOR(w http.ResponseWriter, v any) {
	val, ok := toCBOR(reflect.ValueOf(v))
	if !ok {
		val = cbor.Map{}
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.WriteHeader(http.StatusOK)
	w.Write(cbor.Encode(val))
}

// writeCBORError writes an rpcv2Cbor error. CloudWatch is awsQueryCompatible, so the query error code also
// travels in X-Amzn-Query-Error.
func writeCBORError(w http.ResponseWriter, e *apiError) {
	m := cbor.Map{
		"__type":  cbor.String(cloudwatchErrorType(e)),
		"message": cbor.String(e.Message),
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("X-Amzn-Query-Error", queryError(e))
	w.WriteHeader(e.Status)
	w.Write(cbor.Encode(m))
}
