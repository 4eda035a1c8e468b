/* The C ABI of a compiled tgc training step.
 *
 * `tgc MODEL --emit=header` writes this, followed by the buffer table of the
 * model, as train_step.h. A compiled step is one function,
 *
 *     void tgc_train_step(void **buffers);
 *
 * where buffers[i] points to the i-th buffer described by
 * tgc_model.buffers[i]: a dense row-major array of `shape` in `dtype`
 * (64-byte alignment recommended). Roles, in order: parameters, optimizer
 * state, inputs (data; with loss scaling the state `loss_scale` and
 * `loss_scale_growth_tracker`; with `tgc --data-parallel` the 0-d f32
 * `dp_weight`, this process's share of the global token count; then the 0-d
 * f32 `lr` and 1-based `step`, the count of applied updates), then the
 * outputs the step writes: `loss`, `grad_norm` (when the updates are
 * guarded, by loss scaling or `tgc --guard-update`, then each gradient's f64
 * sum of squares, `grad_sumsq.<parameter>`), the new
 * parameters (one per trainable parameter, of the same name: a parameter
 * frozen by `tgc --freeze` is read and never written), the new optimizer
 * state and, when compiled with
 * `tgc --return-gradients`, the gradients. Output buffers must not alias
 * inputs, except that when tgc_model.update_in_place is 1 each new parameter
 * and new state may be the very buffer of its input (updated in place).
 *
 * The object also calls tgc_arena_alloc / tgc_arena_release (declared
 * below; libtgc_runtime.a provides them) for its planned intermediates, and
 * runs its matmuls on OpenMP threads: link with -lomp. A `--data-parallel`
 * step also calls tgc_allreduce_add / _start, tgc_collective_wait (and with
 * --zero=1 tgc_zero_add, tgc_reduce_scatter_start, tgc_all_gather_start,
 * tgc_shard_copy, tgc_sum_over_processes), which libtgc_runtime.a defines
 * for one process and libtgc_runtime_mpi.a over MPI.
 */
#ifndef TGC_RUNTIME_ABI_H
#define TGC_RUNTIME_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tgc_role {
  TGC_PARAM = 0,
  TGC_STATE = 1,
  TGC_INPUT = 2,
  TGC_OUTPUT = 3,
  TGC_NEW_PARAM = 4,
  TGC_NEW_STATE = 5,
  TGC_GRAD = 6
};

enum tgc_dtype {
  TGC_F32 = 0,
  TGC_F64 = 1,
  TGC_BF16 = 2,
  TGC_F16 = 3,
  TGC_I32 = 4,
  TGC_I64 = 5
};

/* How the runtime initialises a parameter (as the model family's reference
 * implementation does) or optimizer state (zeros unless it says). */
enum tgc_init {
  TGC_INIT_NONE = 0,
  TGC_INIT_NORMAL = 1, /* normal(0, init_scale) */
  TGC_INIT_ONES = 2,
  TGC_INIT_ZEROS = 3,
  TGC_INIT_UNIFORM = 4, /* uniform(-init_scale, init_scale) */
  TGC_INIT_CONSTANT = 5 /* init_scale everywhere (the first loss scale) */
};

typedef struct {
  const char *name;
  int32_t role;
  int32_t dtype;
  int32_t init;
  double init_scale;
  int32_t rank;
  int64_t shape[8];
  /* tgc --zero=1: optimizer state that is this process's shard of the state
   * of parameter buffers[shard_of] (ceil(numel / zero_processes) elements,
   * zero padded); -1 for every other buffer. */
  int32_t shard_of;
  /* tgc --zero=3: a parameter (or its new value) of which this process
   * holds its shard of shard_numel = ceil(numel / zero_processes) elements,
   * zero padded; `shape` is the whole tensor's. 0 for every other buffer. */
  int64_t shard_numel;
  /* tgc --lora-r: for NAME.lora_A.weight and NAME.lora_B.weight, the scale
   * s of their path (NAME.weight's product gains s * B·A; rank_pattern and
   * alpha_pattern make it differ between modules). 0 for every other
   * buffer. */
  double lora_scale;
} tgc_buffer_info;

typedef struct {
  const char *model_type; /* "llama", "mistral", "gpt2", "mlp" */
  const char *optimizer;  /* "sgd", "adamw" */
  int64_t batch_size;
  int64_t seq_len;      /* 1 for the MLP */
  int64_t vocab_size;   /* classes for the MLP */
  int64_t num_features; /* MLP input size, 0 otherwise */
  int64_t steps;        /* default number of steps */
  double lr;            /* default learning rate */
  uint64_t seed;
  int32_t num_buffers;
  const tgc_buffer_info *buffers;
  /* the static arena of intermediates (tgc-plan-buffers) */
  int64_t arena_bytes;
  int32_t update_in_place; /* 1: each new parameter/state may share its input's
                              buffer (the step reads nothing it has updated) */
  int32_t zero_processes;  /* tgc --zero=1: the step runs as exactly this many
                              processes (their optimizer state sharded); 0
                              otherwise */
  /* tgc --lora-r: the parameters NAME.lora_A.weight [r, in] and
   * NAME.lora_B.weight [out, r] adapt the frozen NAME.weight, whose product
   * gains their lora_scale * B·A ([in, out] weights, GPT-2's Conv1D, gain
   * its transpose: lora_fan_in_fan_out). lora_rank is LoraConfig's r (a
   * module's own is its A's first dimension), lora_config the
   * adapter_config.json PEFT would write. lora_rank is 0 and lora_config ""
   * without adapters. */
  int64_t lora_rank;
  int32_t lora_fan_in_fan_out;
  const char *lora_config;
} tgc_model_info;

extern const tgc_model_info tgc_model;

void tgc_train_step(void **buffers);

/* The arena of intermediates, tgc_arena_bytes long: tgc_arena_alloc returns
 * base + offset of a 64-byte-aligned block (allocated once), and
 * tgc_arena_release frees pointers outside it (heap buffers). */
extern const int64_t tgc_arena_bytes;
void *tgc_arena_alloc(int64_t offset);
void tgc_arena_release(void *pointer);

#ifdef __cplusplus
}
#endif

#endif /* TGC_RUNTIME_ABI_H */
