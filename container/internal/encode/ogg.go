package encode

import (
	"crypto/rand"
	"encoding/binary"
)

// Ogg page writing (RFC 3533) for Ogg Opus (RFC 7845).
//
// Why not pion's oggwriter (github.com/pion/webrtc/v4/pkg/media/oggwriter),
// the maintained Go Ogg writer: it fits RTP recording, not this encoder. It
// takes RTP packets and derives granule positions from RTP timestamps, one
// packet behind (a page's granule is where its packet starts, not ends); it
// writes a fixed pre-skip of 3840 whatever the encoder's lookahead (libopus
// at 24 kHz: 312 at 48 kHz), which would cut 73 ms of speech; it puts one
// packet per page with a single lacing byte, so a packet over 255 bytes
// makes a corrupt page; and on an io.Writer it never marks end of stream or
// trims the last frame's padding. Each would break the duration check
// (decoded length within 20 ms of the WAV). The page format is small and
// fully specified, so it is written here: any number of packets per page
// with proper lacing, exact granules, EOS with end trimming.

// oggCRC is the Ogg checksum: CRC-32, polynomial 0x04c11db7, not reflected,
// initial value 0 (hash/crc32 only offers the reflected form).
var oggCRC = func() *[256]uint32 {
	var t [256]uint32
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return &t
}()

// Page header flags.
const (
	oggBOS = 0x02
	oggEOS = 0x04
)

// oggStream writes the pages of one logical bitstream.
type oggStream struct {
	serial uint32
	seq    uint32
}

func newOggStream() *oggStream {
	var b [4]byte
	rand.Read(b[:])
	return &oggStream{serial: binary.LittleEndian.Uint32(b[:])}
}

// pages appends pages holding packets to dst, as many as the 255-entry
// segment table needs. granule is the granule position after the last
// packet; granuleAt(i) gives it after packet i, for pages that end early.
// flags go on the first page (BOS) or the last (EOS).
func (o *oggStream) pages(dst []byte, packets [][]byte, granuleAt func(i int) int64, flags byte) []byte {
	for start := 0; start < len(packets); {
		// Fit whole packets: a packet of n bytes takes n/255+1 lacing values.
		end, lacing := start, 0
		for end < len(packets) && lacing+len(packets[end])/255+1 <= 255 {
			lacing += len(packets[end])/255 + 1
			end++
		}
		if end == start { // one packet over 64 KiB: not produced by libopus
			end = start + 1
		}
		f := byte(0)
		if start == 0 {
			f |= flags & oggBOS
		}
		if end == len(packets) {
			f |= flags & oggEOS
		}
		dst = o.page(dst, packets[start:end], granuleAt(end-1), f)
		start = end
	}
	return dst
}

func (o *oggStream) page(dst []byte, packets [][]byte, granule int64, flags byte) []byte {
	begin := len(dst)
	dst = append(dst, "OggS"...)
	dst = append(dst, 0, flags)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(granule))
	dst = binary.LittleEndian.AppendUint32(dst, o.serial)
	dst = binary.LittleEndian.AppendUint32(dst, o.seq)
	o.seq++
	crcAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	nseg := 0
	for _, p := range packets {
		nseg += len(p)/255 + 1
	}
	dst = append(dst, byte(nseg))
	for _, p := range packets {
		for n := len(p); ; n -= 255 {
			if n < 255 {
				dst = append(dst, byte(n))
				break
			}
			dst = append(dst, 255)
		}
	}
	for _, p := range packets {
		dst = append(dst, p...)
	}
	binary.LittleEndian.PutUint32(dst[crcAt:], OggCRC(dst[begin:]))
	return dst
}

// OggCRC is the Ogg page checksum of page (with its CRC field zeroed): the
// page writer's, and the one tests and tools check pages with.
func OggCRC(page []byte) uint32 {
	var crc uint32
	for _, b := range page {
		crc = crc<<8 ^ oggCRC[byte(crc>>24)^b]
	}
	return crc
}
