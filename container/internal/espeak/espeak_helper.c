#include <stdlib.h>
#include <espeak-ng/speak_lib.h>
#include "espeak_helper.h"

extern int goSynthChunk(short *wav, int numsamples);

static int synth_cb(short *wav, int numsamples, espeak_EVENT *events) {
	(void)events;
	if (wav == NULL || numsamples <= 0) {
		return 0;
	}
	return goSynthChunk(wav, numsamples);
}

int helper_init(int buflength_ms) {
	int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, buflength_ms, NULL, 0);
	if (rate > 0) {
		espeak_SetSynthCallback(synth_cb);
	}
	return rate;
}

int helper_set_voice(const char *name) {
	return espeak_SetVoiceByName(name) == EE_OK ? 0 : -1;
}

int helper_set_rate(int wpm) {
	return espeak_SetParameter(espeakRATE, wpm, 0) == EE_OK ? 0 : -1;
}

int helper_synth(const char *text, size_t size) {
	espeak_ERROR err = espeak_Synth(text, size, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, NULL);
	if (err != EE_OK) {
		return -1;
	}
	return espeak_Synchronize() == EE_OK ? 0 : -1;
}

const char *helper_text_to_phonemes(const void **textptr) {
	/* phonememode 0x02: IPA phoneme names as UTF-8, no separator, no tie. */
	return espeak_TextToPhonemes(textptr, espeakCHARS_UTF8, 0x02);
}
