package encode

/*
#cgo pkg-config: opus
#include <opus.h>

static OpusEncoder *opus_new(int rate, int *err) {
	OpusEncoder *e = opus_encoder_create(rate, 1, OPUS_APPLICATION_AUDIO, err);
	if (e) {
		opus_encoder_ctl(e, OPUS_SET_BITRATE(32000));
	}
	return e;
}

static int opus_lookahead(OpusEncoder *e) {
	opus_int32 la = 0;
	opus_encoder_ctl(e, OPUS_GET_LOOKAHEAD(&la));
	return la;
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// OpusEncodeRate is the rate samples are encoded at (resampled to it when
// the engine's differs): 24 kHz keeps Kokoro's full band without a
// resampler.
const OpusEncodeRate = 24000

// OpusBitrate is the encoder's target bitrate, bits per second (ample for
// mono speech).
const OpusBitrate = 32000

// opusFrame is 20 ms at OpusEncodeRate, the usual frame for speech.
const opusFrame = OpusEncodeRate / 50

// granuleScale converts samples at OpusEncodeRate to Ogg Opus granules,
// which always count 48 kHz samples.
const granuleScale = 48000 / OpusEncodeRate

// opusEncoder writes Ogg Opus: the OpusHead and OpusTags pages with the
// first audio, then one or more pages per Encode call holding the frames
// completed by it, and on Finish the last (padded) frames on a page marked
// end of stream whose granule trims the padding.
type opusEncoder struct {
	rs        *Resampler
	enc       *C.OpusEncoder
	ogg       *oggStream
	inputRate int
	preSkip   int // 48 kHz samples
	pending   []int16
	frames    int64 // frames encoded
	samples   int64 // input samples at OpusEncodeRate
	started   bool
	packet    [4000]byte
}

func newOpusEncoder(rs *Resampler, inputRate int) (*opusEncoder, error) {
	var e C.int
	enc := C.opus_new(OpusEncodeRate, &e)
	if e != C.OPUS_OK || enc == nil {
		if rs != nil {
			rs.Close()
		}
		return nil, fmt.Errorf("opus_encoder_create: %s", C.GoString(C.opus_strerror(e)))
	}
	return &opusEncoder{rs: rs, enc: enc, ogg: newOggStream(), inputRate: inputRate,
		preSkip: int(C.opus_lookahead(enc)) * granuleScale}, nil
}

// headers are the OpusHead and OpusTags pages (RFC 7845 section 5).
func (o *opusEncoder) headers(dst []byte) []byte {
	head := []byte("OpusHead")
	head = append(head, 1, 1) // version, channels
	head = binary.LittleEndian.AppendUint16(head, uint16(o.preSkip))
	head = binary.LittleEndian.AppendUint32(head, uint32(o.inputRate))
	head = append(head, 0, 0, 0) // output gain, mapping family 0
	dst = o.ogg.page(dst, [][]byte{head}, 0, oggBOS)
	vendor := C.GoString(C.opus_get_version_string())
	tags := []byte("OpusTags")
	tags = binary.LittleEndian.AppendUint32(tags, uint32(len(vendor)))
	tags = append(tags, vendor...)
	tags = binary.LittleEndian.AppendUint32(tags, 0)
	return o.ogg.page(dst, [][]byte{tags}, 0, 0)
}

// encodeFrames encodes every whole frame in pending and appends their pages.
func (o *opusEncoder) encodeFrames(dst []byte, flags byte, lastGranule int64) ([]byte, error) {
	var packets [][]byte
	first := o.frames
	for len(o.pending) >= opusFrame {
		n := C.opus_encode(o.enc, (*C.opus_int16)(unsafe.Pointer(&o.pending[0])), opusFrame,
			(*C.uchar)(unsafe.Pointer(&o.packet[0])), C.opus_int32(len(o.packet)))
		if n < 0 {
			return dst, fmt.Errorf("opus_encode: %s", C.GoString(C.opus_strerror(n)))
		}
		packets = append(packets, append([]byte(nil), o.packet[:n]...))
		o.pending = o.pending[opusFrame:]
		o.frames++
	}
	if len(packets) == 0 {
		return dst, nil
	}
	granuleAt := func(i int) int64 {
		if i == len(packets)-1 && lastGranule > 0 {
			return lastGranule
		}
		return (first + int64(i) + 1) * opusFrame * granuleScale
	}
	return o.ogg.pages(dst, packets, granuleAt, flags), nil
}

func (o *opusEncoder) Encode(dst []byte, samples []int16) ([]byte, error) {
	s, err := resample(o.rs, samples)
	if err != nil {
		return dst, err
	}
	if !o.started {
		o.started = true
		dst = o.headers(dst)
	}
	o.samples += int64(len(s))
	o.pending = append(o.pending, s...)
	return o.encodeFrames(dst, 0, 0)
}

func (o *opusEncoder) Finish(dst []byte) ([]byte, error) {
	s, err := flushResampler(o.rs)
	if err != nil {
		return dst, err
	}
	if !o.started {
		o.started = true
		dst = o.headers(dst)
	}
	o.samples += int64(len(s))
	o.pending = append(o.pending, s...)
	// Pad with the encoder's lookahead (so the last real samples come out of
	// the decoder), then to a whole frame; the final granule, pre-skip plus
	// the real samples, tells the decoder to drop the padding.
	pad := o.preSkip / granuleScale
	pad += (opusFrame - (len(o.pending)+pad)%opusFrame) % opusFrame
	o.pending = append(o.pending, make([]int16, pad)...)
	return o.encodeFrames(dst, oggEOS, int64(o.preSkip)+o.samples*granuleScale)
}

func (o *opusEncoder) Close() {
	if o.enc != nil {
		C.opus_encoder_destroy(o.enc)
		o.enc = nil
	}
	if o.rs != nil {
		o.rs.Close()
	}
}
