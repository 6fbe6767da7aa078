#include <stddef.h>
int helper_init(int buflength_ms);
int helper_set_voice(const char *name);
int helper_set_rate(int wpm);
int helper_synth(const char *text, size_t size);
const char *helper_text_to_phonemes(const void **textptr);
