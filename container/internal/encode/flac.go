package encode

/*
#cgo pkg-config: flac
#include <FLAC/stream_encoder.h>
#include <stdlib.h>
#include <string.h>

// flac_sink collects what libFLAC writes, for Go to take after each call:
// no Go callback crosses the cgo boundary.
typedef struct { unsigned char *buf; size_t len, cap; int oom; } flac_sink;

static FLAC__StreamEncoderWriteStatus flac_write(const FLAC__StreamEncoder *e, const FLAC__byte buffer[], size_t bytes, uint32_t samples, uint32_t frame, void *cd) {
	flac_sink *s = cd;
	if (s->len + bytes > s->cap) {
		size_t c = (s->len + bytes) * 2;
		unsigned char *b = realloc(s->buf, c);
		if (!b) { s->oom = 1; return FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR; }
		s->buf = b;
		s->cap = c;
	}
	memcpy(s->buf + s->len, buffer, bytes);
	s->len += bytes;
	return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;
}

static FLAC__StreamEncoder *flac_new(unsigned rate, flac_sink *sink, int *status) {
	FLAC__StreamEncoder *e = FLAC__stream_encoder_new();
	if (!e) { *status = -1; return NULL; }
	FLAC__stream_encoder_set_channels(e, 1);
	FLAC__stream_encoder_set_bits_per_sample(e, 16);
	FLAC__stream_encoder_set_sample_rate(e, rate);
	FLAC__stream_encoder_set_compression_level(e, 5);
	FLAC__stream_encoder_set_streamable_subset(e, true);
	*status = FLAC__stream_encoder_init_stream(e, flac_write, NULL, NULL, NULL, sink);
	if (*status != FLAC__STREAM_ENCODER_INIT_STATUS_OK) {
		FLAC__stream_encoder_delete(e);
		return NULL;
	}
	return e;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// flacEncoder writes a FLAC stream with libFLAC: the fLaC marker and
// STREAMINFO (total samples 0, "unknown", as a stream cannot know it) with
// the first audio, then a frame per 4096-sample block as blocks fill.
type flacEncoder struct {
	rs   *Resampler
	e    *C.FLAC__StreamEncoder
	sink *C.flac_sink
	buf  []C.FLAC__int32
}

func newFLACEncoder(rs *Resampler, rate int) (*flacEncoder, error) {
	sink := (*C.flac_sink)(C.calloc(1, C.size_t(unsafe.Sizeof(C.flac_sink{}))))
	var status C.int
	e := C.flac_new(C.uint(rate), sink, &status)
	if e == nil {
		C.free(unsafe.Pointer(sink.buf))
		C.free(unsafe.Pointer(sink))
		if rs != nil {
			rs.Close()
		}
		return nil, fmt.Errorf("libFLAC: no encoder for %d Hz mono 16-bit (init status %d)", rate, int(status))
	}
	return &flacEncoder{rs: rs, e: e, sink: sink}, nil
}

// take moves what libFLAC wrote so far to dst.
func (f *flacEncoder) take(dst []byte) []byte {
	if f.sink.len > 0 {
		dst = append(dst, unsafe.Slice((*byte)(unsafe.Pointer(f.sink.buf)), int(f.sink.len))...)
		f.sink.len = 0
	}
	return dst
}

func (f *flacEncoder) process(dst []byte, s []int16) ([]byte, error) {
	if len(s) > 0 {
		f.buf = f.buf[:0]
		for _, v := range s {
			f.buf = append(f.buf, C.FLAC__int32(v))
		}
		if C.FLAC__stream_encoder_process_interleaved(f.e, &f.buf[0], C.uint(len(s))) == 0 {
			return dst, fmt.Errorf("libFLAC: encoding failed (state %d)", int(C.FLAC__stream_encoder_get_state(f.e)))
		}
	}
	return f.take(dst), nil
}

func (f *flacEncoder) Encode(dst []byte, samples []int16) ([]byte, error) {
	s, err := resample(f.rs, samples)
	if err != nil {
		return dst, err
	}
	return f.process(dst, s)
}

func (f *flacEncoder) Finish(dst []byte) ([]byte, error) {
	s, err := flushResampler(f.rs)
	if err != nil {
		return dst, err
	}
	if dst, err = f.process(dst, s); err != nil {
		return dst, err
	}
	if C.FLAC__stream_encoder_finish(f.e) == 0 {
		return f.take(dst), fmt.Errorf("libFLAC: finishing the stream failed (state %d)", int(C.FLAC__stream_encoder_get_state(f.e)))
	}
	return f.take(dst), nil
}

func (f *flacEncoder) Close() {
	if f.e != nil {
		C.FLAC__stream_encoder_delete(f.e)
		f.e = nil
		C.free(unsafe.Pointer(f.sink.buf))
		C.free(unsafe.Pointer(f.sink))
	}
	if f.rs != nil {
		f.rs.Close()
	}
}
