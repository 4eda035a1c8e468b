/* A hand-written stand-in for a compiled generation program (GenerateABI.h),
 * to test tgc_generate_main without the compiler: one parameter w [V, V],
 * and the logits of a token are the row of w of the last id. Its "KV cache"
 * records each position's id, so that every call checks the loop's
 * positions: consecutive from 0, each token exactly once, below the cache's
 * length, the rows before them written by earlier calls and left alone.
 *
 * TOY_TRACE=1 prints each call on stdout ("<prefill 0..3>", "<decode 4>"),
 * between the text the loop prints. TOY_SIGNAL_AT=P raises SIGINT in the
 * decode of position P (TOY_SIGNALS=2: twice).
 *
 * Compile with -DTOY_VOCAB=N for another vocabulary size (default 272),
 * -DTOY_CACHE=N for another cache length (default 12), -DTOY_SOFTCAP=C for
 * a logit soft cap (default 0: none). */
#include "tgc/Runtime/GenerateABI.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TOY_VOCAB
#define TOY_VOCAB 272
#endif
#ifndef TOY_SOFTCAP
#define TOY_SOFTCAP 0.0
#endif
#ifndef TOY_CACHE
#define TOY_CACHE 12
#endif
enum { V = TOY_VOCAB, L = TOY_CACHE, P = 4 };

static const tgc_buffer_info buffers[] = {
    {"w", TGC_PARAM, TGC_F32, TGC_INIT_NORMAL, 0.02, 2, {V, V}, -1},
    {"input_ids", TGC_INPUT, TGC_I32, TGC_INIT_NONE, 0, 2, {1, P}, -1},
    {"positions", TGC_INPUT, TGC_I32, TGC_INIT_NONE, 0, 2, {1, P}, -1},
    {"past_key_values.0.key", TGC_STATE, TGC_F32, TGC_INIT_NONE, 0, 4,
     {1, L, 1, 1}, -1},
    {"past_key_values.0.value", TGC_STATE, TGC_F32, TGC_INIT_NONE, 0, 4,
     {1, L, 1, 1}, -1},
    {"logits", TGC_OUTPUT, TGC_F32, TGC_INIT_NONE, 0, 2, {1, V}, -1},
};

const tgc_generate_info tgc_generate_model = {
    "toy", V, L, P, TOY_SOFTCAP, 7, sizeof buffers / sizeof buffers[0], buffers};
const int64_t tgc_arena_bytes = 0;

static int64_t next_position = 0;

static void fail(const char *what, long long value) {
  fprintf(stderr, "toy model: %s (%lld)\n", what, value);
  abort();
}

/* Checks and records the tokens of one call; the logits of its last. */
static void run(void **b, int64_t n, const char *name) {
  const float *w = b[0];
  const int32_t *ids = b[1], *positions = b[2];
  float *key = b[3], *value = b[4], *logits = b[5];
  const char *trace = getenv("TOY_TRACE");
  if (trace && *trace == '1') {
    if (n == 1)
      printf("<%s %d>", name, positions[0]);
    else
      printf("<%s %d..%d>", name, positions[0], positions[n - 1]);
    fflush(stdout);
  }
  for (int64_t r = 0; r < next_position; ++r)
    if (key[r] == 0 || value[r] != (float)r)
      fail("a cache row before this call is not what the model wrote", r);
  for (int64_t k = 0; k < n; ++k) {
    if (positions[k] != next_position)
      fail("position is not the next one", positions[k]);
    if (positions[k] < 0 || positions[k] >= L)
      fail("position outside the cache", positions[k]);
    if (ids[k] < 0 || ids[k] >= V)
      fail("id outside the vocabulary", ids[k]);
    key[next_position] = (float)(ids[k] + 1);
    value[next_position] = (float)next_position;
    ++next_position;
  }
  for (int64_t c = 0; c < V; ++c)
    logits[c] = w[(int64_t)ids[n - 1] * V + c];
}

void tgc_prefill(void **b) { run(b, P, "prefill"); }

void tgc_decode(void **b) {
  const int32_t *positions = b[2];
  const char *at = getenv("TOY_SIGNAL_AT");
  if (at && atoi(at) == positions[0]) {
    const char *times = getenv("TOY_SIGNALS");
    raise(SIGINT);
    if (times && atoi(times) == 2)
      raise(SIGINT);
  }
  run(b, 1, "decode");
}

int main(int argc, char **argv) { return tgc_generate_main(argc, argv); }
