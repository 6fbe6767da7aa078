package emulator

import (
	"strconv"
)

// InstanceURLs returns the base URLs (http://127.0.0.1:<port>) of the endpoint's serving instances: those
// that have started and answered their first /ping, are not draining and have not failed a health check, in
// the fleet's order. It returns nil for an endpoint with no such instance or no fleet (unknown, deleted, not
// started yet).
//
// It is for measuring the emulator's own data path: a client that sends the same request to an instance
// directly and through InvokeEndpointWithResponseStream sees what the emulator's routing, proxying and event
// stream encoding add. The answer is a snapshot: a replaced or rescaled instance serves on another port.
func (e *Emulator) InstanceURLs(endpoint string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fleets[endpoint]
	if f == nil {
		return nil
	}
	var urls []string
	for _, in := range f.instances {
		if !in.ready.Load() || in.draining.Load() || in.unhealthy.Load() {
			continue
		}
		if port := in.port.Load(); port > 0 {
			urls = append(urls, "http://127.0.0.1:"+strconv.Itoa(int(port)))
		}
	}
	return urls
}
