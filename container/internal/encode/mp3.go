package encode

/*
#cgo LDFLAGS: -lmp3lame
#include <lame/lame.h>
#include <stdlib.h>

static lame_global_flags *mp3_new(int rate) {
	lame_global_flags *g = lame_init();
	if (!g) return NULL;
	lame_set_in_samplerate(g, rate);
	lame_set_out_samplerate(g, rate);
	lame_set_num_channels(g, 1);
	lame_set_mode(g, MONO);
	lame_set_brate(g, 64);
	lame_set_quality(g, 5);
	lame_set_bWriteVbrTag(g, 0); // a streamed file cannot have its Xing frame filled in
	if (lame_init_params(g) < 0) {
		lame_close(g);
		return NULL;
	}
	return g;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// MP3Bitrate is the constant bitrate of mp3 responses, kbit/s.
const MP3Bitrate = 64

// mp3Encoder writes MPEG-1/2 Layer III frames with LAME, constant bitrate
// and no Xing/LAME header frame (it needs the length, which a stream does
// not know when it starts). LAME holds back up to about two frames (1152
// samples each) plus its lookahead, so the first bytes follow the first
// segment a little later than PCM's.
type mp3Encoder struct {
	rs  *Resampler
	g   *C.lame_global_flags
	out []byte
}

func newMP3Encoder(rs *Resampler, rate int) (*mp3Encoder, error) {
	g := C.mp3_new(C.int(rate))
	if g == nil {
		if rs != nil {
			rs.Close()
		}
		return nil, fmt.Errorf("lame: no MP3 encoder for %d Hz mono", rate)
	}
	return &mp3Encoder{rs: rs, g: g}, nil
}

func (m *mp3Encoder) Encode(dst []byte, samples []int16) ([]byte, error) {
	s, err := resample(m.rs, samples)
	if err != nil {
		return dst, err
	}
	return m.encode(dst, s)
}

// encode runs samples already at the output rate through LAME.
func (m *mp3Encoder) encode(dst []byte, s []int16) ([]byte, error) {
	if len(s) == 0 {
		return dst, nil
	}
	// LAME's documented worst case: 1.25 × samples + 7200 bytes.
	need := len(s)*5/4 + 7200
	if cap(m.out) < need {
		m.out = make([]byte, need)
	}
	n := C.lame_encode_buffer(m.g, (*C.short)(unsafe.Pointer(&s[0])), nil, C.int(len(s)),
		(*C.uchar)(unsafe.Pointer(&m.out[0])), C.int(need))
	if n < 0 {
		return dst, fmt.Errorf("lame_encode_buffer: error %d", int(n))
	}
	return append(dst, m.out[:n]...), nil
}

func (m *mp3Encoder) Finish(dst []byte) ([]byte, error) {
	s, err := flushResampler(m.rs)
	if err != nil {
		return dst, err
	}
	if dst, err = m.encode(dst, s); err != nil {
		return dst, err
	}
	buf := make([]byte, 7200)
	n := C.lame_encode_flush(m.g, (*C.uchar)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	if n < 0 {
		return dst, fmt.Errorf("lame_encode_flush: error %d", int(n))
	}
	return append(dst, buf[:n]...), nil
}

func (m *mp3Encoder) Close() {
	if m.g != nil {
		C.lame_close(m.g)
		m.g = nil
	}
	if m.rs != nil {
		m.rs.Close()
	}
}
