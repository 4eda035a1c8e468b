/* The C ABI of a compiled tgc generation program
 * (`tgc MODEL --program=generate -o generate`).
 *
 * Two functions take the same buffer table, tgc_generate_model.buffers:
 *
 *     void tgc_prefill(void **buffers);  // prefill_tokens tokens a call
 *     void tgc_decode(void **buffers);   // one token a call
 *
 * Buffers, in order: the parameters (TGC_PARAM, Hugging Face names, init
 * as in train_step.h); `input_ids` and `positions` (TGC_INPUT, i32,
 * [1, prefill_tokens]: tgc_decode reads their first element only); each
 * layer's key and value cache (TGC_STATE, "past_key_values.<i>.key" and
 * ".value", [1, cache_length, kv_heads, head_dim], read and written in
 * place); then `logits` (TGC_OUTPUT, f32 [1, vocab_size]): the last token's
 * logits, before any final soft cap (logit_softcap: the sampler applies
 * c * tanh(x / c)).
 *
 * A call for the tokens at positions p .. p+n-1 writes their keys and values
 * into cache rows p .. p+n-1 and attends over rows 0 .. p+n-1 (within each
 * layer's window); later rows get weight 0, so they must hold finite values
 * (zero the caches before the first call). Positions must be below
 * cache_length.
 *
 * The object calls tgc_arena_alloc / tgc_arena_release (ABI.h) and runs on
 * OpenMP threads, as a training step does. libtgc_runtime.a provides
 * tgc_generate_main, the generation loop; the model-info file tgc writes
 * defines main() calling it.
 */
#ifndef TGC_RUNTIME_GENERATEABI_H
#define TGC_RUNTIME_GENERATEABI_H

#include "tgc/Runtime/ABI.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *model_type; /* "llama", "gpt2", ... as in config.json */
  int64_t vocab_size;
  int64_t cache_length;   /* positions the caches hold */
  int64_t prefill_tokens; /* tokens of one tgc_prefill call */
  double logit_softcap;   /* 0: none */
  uint64_t seed;          /* default seed (random init, sampling) */
  int32_t num_buffers;
  const tgc_buffer_info *buffers;
} tgc_generate_info;

extern const tgc_generate_info tgc_generate_model;

void tgc_prefill(void **buffers);
void tgc_decode(void **buffers);

/* The generation executable's main (lib/Runtime/Generate). */
int tgc_generate_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* TGC_RUNTIME_GENERATEABI_H */
