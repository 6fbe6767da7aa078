package encode

// MuLawBytes appends samples to dst as G.711 μ-law bytes, by the G.711
// formula (bias 0x84, clip at 32635, eight segments, bits inverted).
func MuLawBytes(dst []byte, samples []int16) []byte {
	for _, s := range samples {
		dst = append(dst, EncodeMuLaw(s))
	}
	return dst
}

// EncodeMuLaw encodes one PCM16 sample as G.711 μ-law.
func EncodeMuLaw(s int16) byte {
	const bias, clip = 0x84, 32635
	v := int(s)
	sign := 0
	if v < 0 {
		v = -v
		sign = 0x80
	}
	if v > clip {
		v = clip
	}
	v += bias
	exp := 7
	for mask := 0x4000; v&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mant := (v >> (exp + 3)) & 0x0F
	return ^byte(sign | exp<<4 | mant)
}
