package cloud

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// TestSDKClientsReuseConnectionsAtHighConcurrency: 32 requests in flight at once, twice, through the SDK HTTP
// client of HTTPClient and of LoadConfig. The second round must open no new connection: with the SDK's default
// of 10 idle connections per host, 22 of the 32 were closed after the first round and dialed again (on real
// SageMaker a TLS handshake inside each re-dialed request's TTFAB).
func TestSDKClientsReuseConnectionsAtHighConcurrency(t *testing.T) {
	const inFlight = 32
	var newConns atomic.Int64
	var arrived sync.WaitGroup
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release // hold every request until all are in flight, so they need inFlight connections
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	loaded, err := LoadConfig(context.Background(), config.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client aws.HTTPClient
	}{{"HTTPClient", HTTPClient()}, {"LoadConfig", loaded.HTTPClient}} {
		t.Run(c.name, func(t *testing.T) {
			round := func() int64 {
				before := newConns.Load()
				release = make(chan struct{})
				arrived.Add(inFlight)
				var wg sync.WaitGroup
				errs := make(chan error, inFlight)
				for range inFlight {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
						resp, err := c.client.Do(req)
						if err != nil {
							errs <- err
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					})
				}
				done := make(chan struct{})
				go func() { arrived.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					close(release)
					t.Fatalf("only some of %d requests reached the server within 10 s", inFlight)
				}
				close(release)
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				return newConns.Load() - before
			}
			round()
			if n := round(); n != 0 {
				t.Fatalf("the second round of %d concurrent requests opened %d new connections, want 0: the client closes idle connections past its per-host limit", inFlight, n)
			}
		})
	}
}
