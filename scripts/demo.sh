#!/usr/bin/env bash
# Main job: install, build, compile the tiny llama into a training executable
# and train it on a corpus every Debian system has (no downloads).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p build/demo
build/bin/tgc stats examples/tiny-llama.json
build/bin/tgc examples/tiny-llama.json -o build/demo/tiny-llama
# Random windows: in order, the small text restarts every ~34 batches and the
# loss jumps back up at each restart. Every 20 steps the loss on held-out
# text (the last 10%, never trained on) is reported: that is the loss to
# watch; each step's own loss is that of one batch.
build/demo/tiny-llama --steps "${STEPS:-100}" --data /usr/share/common-licenses/GPL-3 \
  --data-order random --eval-every 20 \
  --log build/demo/log.jsonl --save build/demo/tiny-llama.safetensors
# What the model writes: its generation program (a KV cache, one token a
# step) with the weights just trained, prompted with the text's bytes.
build/bin/tgc examples/tiny-llama.json --program=generate -o build/demo/tiny-llama-generate
build/demo/tiny-llama-generate --init build/demo/tiny-llama.safetensors \
  --prompt "This License" --max-new-tokens 100 --temperature 0.8 --seed 0
