package measure

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/cloud"
)

// TestQMaxTransportDoesNotRetry: SageMaker answers 503 ServiceUnavailable once, then a
// stream. The transport qmax measures with makes one attempt per request: the first request is an error
// record and the second a success, two attempts in all, where the SDK's default retryer would make the first
// request one slower success of two attempts.
func TestQMaxTransportDoesNotRetry(t *testing.T) {
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			w.Header().Set("X-Amzn-ErrorType", "ServiceUnavailable")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"message":"unavailable"}`))
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue("PayloadPart"))
		m.Payload = append(testWAVHeader(24000), make([]byte, 4800)...)
		eventstream.NewEncoder().Encode(w, m)
	}))
	defer srv.Close()
	// The SDK configuration the tool itself uses against an endpoint URL: its HTTP client hands the transport
	// its own copy of each request body (cloud.HTTPClient), without which the SDK's default client can tear a
	// fast answer's connection down under the stream being read, more often the more loaded the machine.
	cfg := cloud.LocalConfig(srv.URL, cloud.LocalCredentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"})
	w, err := measuringStreamTransport(cloud.NewClients(cfg), "speech-espeak-ng").Worker(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var classes []string
	var errs []error
	for range 2 {
		_, err := w.Send(ctx, "hello")
		class, _ := bench.Classify(ctx, err)
		classes, errs = append(classes, class), append(errs, err)
	}
	if attempts.Load() != 2 || classes[0] == bench.ClassOK || classes[1] != bench.ClassOK {
		t.Errorf("%d attempts, classes %v (errors %v): want one attempt per request, the 503 an error record and the next a success", attempts.Load(), classes, errs)
	}
}

// testWAVHeader is a streaming WAV header, PCM16 mono at rate.
func testWAVHeader(rate int) []byte {
	h := append([]byte(nil), "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 0xFFFFFFFF)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1)
	h = binary.LittleEndian.AppendUint16(h, 1)
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*2))
	h = binary.LittleEndian.AppendUint16(h, 2)
	h = binary.LittleEndian.AppendUint16(h, 16)
	h = append(h, "data"...)
	return binary.LittleEndian.AppendUint32(h, 0xFFFFFFFF)
}
