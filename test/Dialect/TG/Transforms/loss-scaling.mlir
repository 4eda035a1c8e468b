// Loss scaling: tg-autodiff seeds the reverse sweep with the `loss_scale`
// input; tg-optimizer makes it state (with a growth tracker), unscales the
// gradients (times the clip factor), reports the unscaled norm and gives
// every update the overflow flag.
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff=loss-scale=true | FileCheck %s --check-prefix=SEED
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff=loss-scale=true --tg-optimizer="loss-scaling=dynamic loss-scale-growth-interval=100 grad-clip=1.0" | FileCheck %s
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff=loss-scale=true --tg-optimizer="optimizer=sgd momentum=0.9 loss-scaling=static" | FileCheck %s --check-prefix=STATIC
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff --tg-optimizer="grad-clip=1.0 guard-updates=true" | FileCheck %s --check-prefix=GUARD
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff --tg-optimizer="grad-clip=1.0" | FileCheck %s --check-prefix=UNGUARDED
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff=loss-scale=true --tg-optimizer="loss-scaling=dynamic guard-updates=true" | FileCheck %s --check-prefix=SCALEDGUARD
// RUN: not tgc-opt %S/optimizer.mlir --tg-autodiff --tg-optimizer="loss-scaling=dynamic" 2>&1 | FileCheck %s --check-prefix=NOSEED
// RUN: not tgc-opt %S/optimizer.mlir --tg-autodiff=loss-scale=true --tg-optimizer="loss-scaling=sometimes" 2>&1 | FileCheck %s --check-prefix=BADMODE

// SEED-LABEL: func.func @train_step
// SEED-SAME: %[[SCALE:[^:]*]]: tensor<f32> {tg.input = "loss_scale"})
// SEED: tg.cross_entropy_grad %[[SCALE]],

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[SCALE:[^:]*]]: tensor<f32> {tg.state = "loss_scale"}, %[[TRACKER:[^:]*]]: tensor<f32> {tg.state = "loss_scale_growth_tracker"}
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "grad_norm"}
// CHECK-SAME: tensor<f32> {tg.state = "loss_scale"}, tensor<f32> {tg.state = "loss_scale_growth_tracker"})
// CHECK: %[[SCALED:.*]] = tg.global_norm
// CHECK-NEXT: %[[INV:.*]], %[[SKIP:.*]], %[[NEXT:.*]], %[[NEXTT:.*]] = tg.loss_scale_update %[[SCALE]], %[[TRACKER]], %[[SCALED]] {growth_interval = 100 : i64} : tensor<f32>
// CHECK-NEXT: %[[NORM:.*]] = tg.mul %[[SCALED]], %[[INV]]
// CHECK-NEXT: %[[CLIP:.*]] = tg.clip_factor %[[NORM]]
// CHECK-NEXT: %[[FACTOR:.*]] = tg.mul %[[CLIP]], %[[INV]]
// CHECK-NEXT: %[[GW:.*]] = tg.mul %{{.*}}, %[[FACTOR]] : tensor<4x8xf32>
// CHECK: tg.adamw_update %{{.*}}, %[[GW]], {{.*}} skip %[[SKIP]]
// CHECK: return %{{.*}}, %[[NORM]], {{.*}}, %[[NEXT]], %[[NEXTT]]

// A static scale never changes (growth_interval 0); overflowed steps are
// still skipped.
// STATIC: tg.loss_scale_update {{.*}} {growth_interval = 0 : i64}
// STATIC: tg.sgd_momentum_update {{.*}} skip %

// Without loss scaling, guard-updates makes the skip flag of the norm
// itself, and the step returns each gradient's sum of squares.
// GUARD-LABEL: func.func @train_step
// GUARD-SAME: tensor<f64> {tg.output = "grad_sumsq.w"}, tensor<f64> {tg.output = "grad_sumsq.b"}
// GUARD: %[[NORM:.*]] = tg.global_norm
// GUARD-NEXT: %[[SKIP:.*]] = tg.not_finite %[[NORM]] : tensor<f32>
// GUARD: tg.adamw_update {{.*}} skip %[[SKIP]]
// GUARD: tg.adamw_update {{.*}} skip %[[SKIP]]
// UNGUARDED-LABEL: func.func @train_step
// UNGUARDED-NOT: grad_sumsq
// UNGUARDED-NOT: skip
// Loss scaling's flag is the guard already.
// SCALEDGUARD-NOT: tg.not_finite
// SCALEDGUARD: tg.loss_scale_update

// NOSEED: error: tg-optimizer: loss scaling needs the `loss_scale` input of tg-autodiff loss-scale=true
// BADMODE: for the --loss-scaling option: Cannot find option named 'sometimes'
