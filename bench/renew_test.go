package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
)

// failingInvoker refuses every call and counts them.
type failingInvoker struct{ calls int }

func (f *failingInvoker) InvokeEndpointWithResponseStream(context.Context, *sagemakerruntime.InvokeEndpointWithResponseStreamInput, ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error) {
	f.calls++
	return nil, errors.New("refused")
}

// After a failed request a worker takes a new client, so that a stream the failure left behind never shares
// the client's event-stream decoder with the next request's (aws/smithy-go#714).
func TestSageMakerWorkerTakesANewClientAfterAFailure(t *testing.T) {
	var made []*failingInvoker
	tr := &SageMakerStream{Endpoint: "e", NewClient: func() StreamInvoker {
		f := &failingInvoker{}
		made = append(made, f)
		return f
	}}
	w, err := tr.Worker(0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.Send(context.Background(), "hello"); err == nil {
			t.Fatal("a refused call succeeded")
		}
	}
	if len(made) != 4 {
		t.Fatalf("%d clients made for 3 failed requests, want 4 (one, then a new one after each failure)", len(made))
	}
	for i, f := range made[:3] {
		if f.calls != 1 {
			t.Errorf("client %d carried %d requests, want 1", i, f.calls)
		}
	}
}
