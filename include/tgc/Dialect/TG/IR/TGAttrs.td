//===- TGAttrs.td - tg dialect attributes ------------------*- tablegen -*-===//
//
// Lowering configurations: how a target tiles the ops the neutral lowering
// (convert-tg-to-linalg) emits as loops of its own, and how the CPU
// schedule tiles the matrix products. A target's schedule sets them as
// `tg.tiling` on the op, in the spirit of IREE's `lowering_config`; without
// one an op is lowered untiled.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGATTRS_TD
#define TGC_DIALECT_TG_IR_TGATTRS_TD

include "tgc/Dialect/TG/IR/TGBase.td"
include "mlir/IR/AttrTypeBase.td"

class TG_Attr<string name, string attrMnemonic> : AttrDef<TG_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def TG_AttentionTilingAttr : TG_Attr<"AttentionTiling", "attention_tiling"> {
  let summary = "How a target tiles one tg.attention or tg.attention_grad";
  let description = [{
    `tile`: query and key positions per FlashAttention tile, over all
    sequences and heads at once (batched products); 0 or at least the
    sequence length: the whole sequence as one tile.

    `task_tile`: when positive, the attention runs instead as parallel
    tasks, one per (sequence, key/value head, query tile) in the forward
    and per (sequence, key/value head) in the gradient, each copying its
    operands into tiles of `task_tile` positions of its own.

    `transposed_operands`: the gradient's products read score tiles
    transposed through their maps (a schedule that takes such maps),
    instead of from transposed copies.

    ```mlir
    #tg.attention_tiling<tile = 64, task_tile = 0, transposed_operands = true>
    ```
  }];
  let parameters = (ins "int64_t":$tile, "int64_t":$task_tile,
                        "bool":$transposed_operands);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TG_RowTasksAttr : TG_Attr<"RowTasks", "row_tasks"> {
  let summary = "A norm (or its gradient) as parallel tasks over its rows";
  let description = [{
    The rows (all axes but the last) of a tg.rms_norm, tg.layer_norm or
    their gradients run as parallel tasks of `rows` rows each; their
    partial weight gradients are then summed. Without it a norm is one
    pass over the whole tensor per statistic.

    ```mlir
    #tg.row_tasks<rows = 16>
    ```
  }];
  let parameters = (ins "int64_t":$rows);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TG_RowChunksAttr : TG_Attr<"RowChunks", "row_chunks"> {
  let summary = "An expert product's rows in chunks of static size";
  let description = [{
    The rows of each expert's segment of a tg.grouped_matmul or
    tg.grouped_weight_grad (known only at run time, from the offsets) are
    visited in chunks of `rows`, then the rest in zero-padded chunks of
    `tail_rows`, so that every product has a static shape: a target picks
    sizes its matrix-product schedule runs well, the tail small enough that
    little work is spent on padding. Without it, one padded chunk of all
    the rows per expert.

    ```mlir
    #tg.row_chunks<rows = 256, tail_rows = 32>
    ```
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$tail_rows);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TG_MatmulTilingAttr : TG_Attr<"MatmulTiling", "matmul_tiling"> {
  let summary = "How the CPU schedule tiles one linalg.matmul or batch_matmul";
  let description = [{
    Set by tgc-vectorize-matmuls on the bufferized products it schedules
    (from its tile model, or `tiles` given by hand) and read by its
    transform schedules, which match products by it: output tiles of
    `tile_m` x `tile_n` (one parallel task each; a `batched` product's batch
    entries are tasks too), a K tile of `tile_k`, register tiles of
    `register_m` x `register_n` accumulators. Removed once the products are
    FMAs.

    ```mlir
    #tg.matmul_tiling<tile_m = 64, tile_n = 256, tile_k = 256,
                      register_m = 4, register_n = 16, batched = false>
    ```
  }];
  let parameters = (ins "int64_t":$tile_m, "int64_t":$tile_n,
                        "int64_t":$tile_k, "int64_t":$register_m,
                        "int64_t":$register_n, "bool":$batched);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TGC_DIALECT_TG_IR_TGATTRS_TD
