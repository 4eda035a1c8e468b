// tg-lora's selection as PEFT's LoraConfig makes it: target_modules as a
// regular expression, layers_to_transform (with layers_pattern),
// exclude_modules, and per-module ranks and alphas (rank_pattern,
// alpha_pattern, keys matched as `(.*\.)?(KEY)`).
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 target-pattern=model.layers.1.self_attn.(q|v)_proj' | FileCheck %s --check-prefix=REGEX
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=q_proj,v_proj layers=1' | FileCheck %s --check-prefix=LAYER1
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=v_proj,model.layers.0.self_attn.q_proj layers=1 layers-pattern=layers' | FileCheck %s --check-prefix=EXACT
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=q_proj,v_proj exclude=v_proj' | FileCheck %s --check-prefix=EXCLUDE
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=all-linear exclude-pattern=.*layers.0.*' | FileCheck %s --check-prefix=EXCLUDERE
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=q_proj,v_proj rank-pattern-keys=v_proj rank-pattern-ranks=4 alpha-pattern-keys=layers.1.self_attn.q_proj alpha-pattern-alphas=16' | FileCheck %s --check-prefix=PATTERN
// RUN: not tgc-opt %s --tg-lora='rank=2 target-pattern=.*norm' 2>&1 | FileCheck %s --check-prefix=NORM
// RUN: not tgc-opt %s --tg-lora='rank=2 target-pattern=model.layers.0.self_attn' 2>&1 | FileCheck %s --check-prefix=CONTAINER
// RUN: not tgc-opt %s --tg-lora='rank=2 target-pattern=.*k_proj' 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tgc-opt %s --tg-lora='rank=2 target-pattern=(q_proj' 2>&1 | FileCheck %s --check-prefix=BADRE
// RUN: not tgc-opt %s --tg-lora='rank=2 target-pattern=.*q_proj layers=0' 2>&1 | FileCheck %s --check-prefix=REGEXLAYERS
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=q_proj layers-pattern=layers' 2>&1 | FileCheck %s --check-prefix=PATTERNONLY
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=q_proj layers=7' 2>&1 | FileCheck %s --check-prefix=NOLAYER
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=q_proj exclude=v_proj' 2>&1 | FileCheck %s --check-prefix=NOEXCLUSION
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=q_proj rank-pattern-keys=v_proj rank-pattern-ranks=4' 2>&1 | FileCheck %s --check-prefix=UNUSED
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=q_proj rank-pattern-keys=q_proj,layers.0.self_attn.q_proj rank-pattern-ranks=4,3' 2>&1 | FileCheck %s --check-prefix=CONFLICT
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=q_proj rank-pattern-keys=q_proj rank-pattern-ranks=9' 2>&1 | FileCheck %s --check-prefix=WIDE
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=q_proj rank-pattern-keys=q_proj' 2>&1 | FileCheck %s --check-prefix=COUNT

// REGEX-LABEL: func.func @forward
// REGEX-NOT: layers.0.self_attn.q_proj.lora_A
// REGEX: "model.layers.1.self_attn.q_proj.lora_A.weight"
// REGEX: "model.layers.1.self_attn.v_proj.lora_A.weight"
// REGEX-NOT: lora_A

// LAYER1-NOT: layers.0.self_attn.{{.}}_proj.lora_A
// LAYER1: "model.layers.1.self_attn.q_proj.lora_A.weight"
// LAYER1: "model.layers.1.self_attn.v_proj.lora_A.weight"
// LAYER1-NOT: lora_A

// An exact name is adapted whatever its layer (PEFT's rule).
// EXACT: "model.layers.0.self_attn.q_proj.lora_A.weight"
// EXACT-NOT: "model.layers.0.self_attn.v_proj.lora_A.weight"
// EXACT: "model.layers.1.self_attn.v_proj.lora_A.weight"
// EXACT-NOT: lora_A

// EXCLUDE: "model.layers.0.self_attn.q_proj.lora_A.weight"
// EXCLUDE: "model.layers.1.self_attn.q_proj.lora_A.weight"
// EXCLUDE-NOT: v_proj.lora_A

// all-linear but layer 0: layer 1's projections (not the head).
// EXCLUDERE-NOT: layers.0.{{.*}}lora_A
// EXCLUDERE: "model.layers.1.self_attn.q_proj.lora_A.weight"
// EXCLUDERE: "model.layers.1.self_attn.v_proj.lora_A.weight"
// EXCLUDERE-NOT: lora_A

// v_proj at r = 4 (s = 8/4); layer 1's q_proj at alpha 16 (s = 16/2);
// layer 0's q_proj as configured (s = 8/2).
// PATTERN-LABEL: func.func @forward(
// PATTERN-SAME: tensor<2x8xf32> {tg.param = "model.layers.0.self_attn.q_proj.lora_A.weight"}
// PATTERN-SAME: tensor<4x8xf32> {tg.param = "model.layers.0.self_attn.v_proj.lora_A.weight"}
// PATTERN-SAME: tensor<8x4xf32> {tg.param = "model.layers.0.self_attn.v_proj.lora_B.weight"}
// PATTERN-SAME: tensor<2x8xf32> {tg.param = "model.layers.1.self_attn.q_proj.lora_A.weight"}
// PATTERN-SAME: tensor<4x8xf32> {tg.param = "model.layers.1.self_attn.v_proj.lora_A.weight"}
// PATTERN: tg.scale %{{.*}} {factor = 4.000000e+00 : f64, tg.layer = 0
// PATTERN: tg.scale %{{.*}} {factor = 2.000000e+00 : f64, tg.layer = 0
// PATTERN: tg.scale %{{.*}} {factor = 8.000000e+00 : f64, tg.layer = 1
// PATTERN: tg.scale %{{.*}} {factor = 2.000000e+00 : f64, tg.layer = 1

// NORM: error: tg-lora: LoRA target_modules ".*norm" selects 'model.norm', which is neither a linear layer nor an embedding
// CONTAINER: error: tg-lora: LoRA target_modules "model.layers.0.self_attn" selects 'model.layers.0.self_attn', which is neither a linear layer nor an embedding
// NOMATCH: error: tg-lora: LoRA target_modules ".*k_proj" matches no linear layer of @forward (its layers: embed_tokens, q_proj, v_proj, lm_head)
// BADRE: error: tg-lora: LoRA target_modules: '(q_proj' is not a regular expression
// REGEXLAYERS: error: tg-lora: LoRA layers_to_transform cannot be used with target_modules ".*q_proj" (as in PEFT)
// PATTERNONLY: error: tg-lora: LoRA layers_pattern needs layers_to_transform (as in PEFT)
// NOLAYER: error: tg-lora: the LoRA targets select no linear layer of @forward in the layers of layers_to_transform
// NOEXCLUSION: error: tg-lora: LoRA exclude_modules excludes none of the targeted modules
// UNUSED: error: tg-lora: LoRA rank_pattern key 'v_proj' matches no adapted module
// CONFLICT: error: tg-lora: LoRA rank_pattern keys 'q_proj' and 'layers.0.self_attn.q_proj' both match module 'model.layers.0.self_attn.q_proj' with different values
// WIDE: error: tg-lora: LoRA rank r = 9 is larger than module 'model.layers.0.self_attn.q_proj' (8 inputs, 8 outputs)
// COUNT: error: tg-lora: each rank-pattern (alpha-pattern) key needs one rank (alpha)
func.func @forward(%e: tensor<16x8xf32> {tg.param = "model.embed_tokens.weight"},
                   %q0: tensor<8x8xf32> {tg.param = "model.layers.0.self_attn.q_proj.weight"},
                   %v0: tensor<8x8xf32> {tg.param = "model.layers.0.self_attn.v_proj.weight"},
                   %q1: tensor<8x8xf32> {tg.param = "model.layers.1.self_attn.q_proj.weight"},
                   %v1: tensor<8x8xf32> {tg.param = "model.layers.1.self_attn.v_proj.weight"},
                   %g: tensor<8xf32> {tg.param = "model.norm.weight"},
                   %head: tensor<16x8xf32> {tg.param = "lm_head.weight"},
                   %ids: tensor<3xi32> {tg.input = "input_ids"},
                   %t: tensor<3xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %e, %ids : tensor<16x8xf32>, tensor<3xi32> -> tensor<3x8xf32>
  %a0 = tg.linear %x, %q0 {tg.layer = 0 : i64} : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %b0 = tg.linear %a0, %v0 {tg.layer = 0 : i64} : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %a1 = tg.linear %b0, %q1 {tg.layer = 1 : i64} : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %b1 = tg.linear %a1, %v1 {tg.layer = 1 : i64} : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %n = tg.rms_norm %b1, %g {eps = 1.0e-05 : f64} : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  %logits = tg.linear %n, %head : tensor<3x8xf32>, tensor<16x8xf32> -> tensor<3x16xf32>
  %loss = tg.cross_entropy %logits, %t : tensor<3x16xf32>, tensor<3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
