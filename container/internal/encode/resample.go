package encode

/*
#cgo pkg-config: soxr
#include <soxr.h>
#include <stdlib.h>

static soxr_t rs_new(double in, double out, const char **err) {
	soxr_io_spec_t io = soxr_io_spec(SOXR_INT16_I, SOXR_INT16_I);
	soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
	soxr_error_t e = 0;
	soxr_t s = soxr_create(in, out, 1, &e, &io, &q, NULL);
	*err = e;
	return s;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Resampler converts a stream of PCM16 mono samples from one rate to
// another with libsoxr (high quality), keeping its filter state between
// calls, so chunk after chunk resamples as one signal.
type Resampler struct {
	s       C.soxr_t
	in, out int
	buf     []int16
}

// NewResampler returns a resampler from rate in to rate out.
func NewResampler(in, out int) (*Resampler, error) {
	if in <= 0 || out <= 0 {
		return nil, fmt.Errorf("resample %d Hz to %d Hz: rates must be positive", in, out)
	}
	var e *C.char
	s := C.rs_new(C.double(in), C.double(out), &e)
	if e != nil {
		return nil, fmt.Errorf("soxr_create %d→%d Hz: %s", in, out, C.GoString(e))
	}
	return &Resampler{s: s, in: in, out: out}, nil
}

// Process resamples samples and returns what the filter lets out now (it
// holds back a short tail until more input or Flush). The result is valid
// until the next call.
func (r *Resampler) Process(samples []int16) ([]int16, error) {
	if r.s == nil {
		return nil, errors.New("resampler closed")
	}
	r.buf = r.buf[:0]
	for len(samples) > 0 {
		room := len(samples)*r.out/r.in + 256
		start := len(r.buf)
		r.buf = append(r.buf, make([]int16, room)...)
		var idone, odone C.size_t
		e := C.soxr_process(r.s, C.soxr_in_t(unsafe.Pointer(&samples[0])), C.size_t(len(samples)), &idone,
			C.soxr_out_t(unsafe.Pointer(&r.buf[start])), C.size_t(room), &odone)
		if e != nil {
			return nil, fmt.Errorf("soxr_process: %s", C.GoString(e))
		}
		r.buf = r.buf[:start+int(odone)]
		samples = samples[int(idone):]
	}
	return r.buf, nil
}

// Flush ends the input and returns the rest of the output.
func (r *Resampler) Flush() ([]int16, error) {
	if r.s == nil {
		return nil, errors.New("resampler closed")
	}
	r.buf = r.buf[:0]
	for {
		const room = 4096
		start := len(r.buf)
		r.buf = append(r.buf, make([]int16, room)...)
		var odone C.size_t
		e := C.soxr_process(r.s, nil, 0, nil, C.soxr_out_t(unsafe.Pointer(&r.buf[start])), room, &odone)
		if e != nil {
			return nil, fmt.Errorf("soxr_process (flush): %s", C.GoString(e))
		}
		r.buf = r.buf[:start+int(odone)]
		if odone == 0 {
			return r.buf, nil
		}
	}
}

// Close frees the resampler.
func (r *Resampler) Close() {
	if r.s != nil {
		C.soxr_delete(r.s)
		r.s = nil
	}
}
