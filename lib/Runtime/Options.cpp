//===- Options.cpp - the training executable's flags ----------------------===//

#include "Options.h"
#include "Fatal.h"
#include "tgc/Runtime/ABI.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace tgc::rt;

static void usage() {
  std::printf("usage: %s [options]\n\n"
              "Trains the compiled model (%s, batch %lld x seq %lld, %s).\n\n"
              "  --data FILE            training data: a text file (read as "
              "bytes) or a .bin of\n"
              "                         uint16 token ids for language models; "
              "CSV rows\n"
              "                         'label,f1,...' for the MLP. Default: "
              "/usr/share/common-\n"
              "                         licenses/GPL-3 (language models) or a "
              "synthetic data set (MLP)\n"
              "  --tokenizer PATH       encode --data's UTF-8 text with a "
              "Hugging Face\n"
              "                         tokenizer.json (or a directory "
              "holding one): documents\n"
              "                         split at blank lines, each with the "
              "tokenizer's special\n"
              "                         tokens; ids cached beside the data "
              "(FILE.tok-HASH.u32)\n"
              "  --steps N              training steps (default %lld)\n"
              "  --seed S               seed of weight init and random data "
              "order (default %llu)\n"
              "  --lr X                 learning rate (default %g)\n"
              "  --init PATH            load weights by Hugging Face name: a "
              ".safetensors file,\n"
              "                         a sharded checkpoint's "
              "model.safetensors.index.json,\n"
              "                         or a model directory with either\n"
              "  --save FILE            save weights and optimizer state at "
              "the end (.safetensors,\n"
              "                         written atomically; state as "
              "'optimizer.<name>'); LoRA: a directory\n"
              "                         with PEFT's adapter_model.safetensors"
              ", adapter_config.json\n"
              "                         and training_state.safetensors\n"
              "  --save-dtype T         f32 (default); bf16 or f16: save only "
              "the parameters,\n"
              "                         rounded, as inference weights (--init "
              "loads them;\n"
              "                         nothing to --resume from)\n"
              "  --resume FILE          continue from a file --save wrote "
              "(same losses as an\n"
              "                         uninterrupted run); LoRA: its "
              "directory, with --init\n"
              "                         giving the same base weights\n"
              "  --init-adapter PATH    LoRA: load adapters PEFT or --save "
              "wrote (a directory\n"
              "                         with adapter_model.safetensors and "
              "adapter_config.json)\n"
              "  --merge-to FILE        LoRA: at the end, write the base "
              "weights merged with\n"
              "                         the adapters (W + scale B A) under "
              "Hugging Face names\n"
              "  --dump-grads FILE      write the first step's gradients by "
              "parameter name\n"
              "  --data-order ORDER     sequential (default) or random\n"
              "  --save-every N         also write --save every N steps "
              "(each written atomically:\n"
              "                         a run that fails keeps the last one)\n"
              "  --eval-every N         every N steps, report the loss on "
              "held-out data (the last\n"
              "                         10%% of the data, or --eval-data)\n"
              "  --eval-data FILE       evaluate on FILE (read as --data is; "
              "--tokenizer\n"
              "                         caches its ids beside it): all of "
              "--data trains\n"
              "  --log FILE             one JSON object per step (step, loss, "
              "grad_norm, ms, tokens_per_s;\n"
              "                         aux_loss for mixtures of experts)\n"
              "  --threads N            threads of the step (default: "
              "OMP_NUM_THREADS, or every core)\n"
              "  --quiet                no progress output\n"
              "  --help                 this text\n"
              "\nSIGINT or SIGTERM ends a run after its step: the log is "
              "closed, --save\nwritten, exit status 128 + the signal; a "
              "second signal stops at once.\n"
              "\nExecutables compiled with tgc --data-parallel also run as "
              "the processes of\nan Open MPI job (mpirun -np N %s ...; "
              "batch per process; docs/distributed.md).\n",
              programName(), tgc_model.model_type,
              (long long)tgc_model.batch_size, (long long)tgc_model.seq_len,
              tgc_model.optimizer, (long long)tgc_model.steps,
              (unsigned long long)tgc_model.seed, tgc_model.lr, programName());
}


static double parsePositive(const std::string &flag, const char *text) {
  char *end = nullptr;
  double v = std::strtod(text, &end);
  if (!*text || *end || !(v > 0) || !std::isfinite(v))
    die(flag + ": expected a positive number, got '" + text + "'");
  return v;
}

Options tgc::rt::parseOptions(int argc, char **argv) {
  Options o;
  for (FlagCursor flags(argc, argv); flags.advance();) {
    const std::string &arg = flags.name();
    auto next = [&] { return flags.value(); };
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else if (arg == "--data")
      o.data = next();
    else if (arg == "--eval-data")
      o.evalData = next();
    else if (arg == "--tokenizer")
      o.tokenizer = next();
    else if (arg == "--init")
      o.init = next();
    else if (arg == "--save")
      o.save = next();
    else if (arg == "--resume")
      o.resume = next();
    else if (arg == "--init-adapter")
      o.initAdapter = next();
    else if (arg == "--merge-to")
      o.mergeTo = next();
    else if (arg == "--save-dtype") {
      std::string v = next();
      if (v == "f32")
        o.saveDtype = DType::F32;
      else if (v == "bf16")
        o.saveDtype = DType::BF16;
      else if (v == "f16")
        o.saveDtype = DType::F16;
      else
        die("--save-dtype: expected f32, bf16 or f16, got '" + v + "'");
    } else if (arg == "--dump-grads")
      o.dumpGrads = next();
    else if (arg == "--log")
      o.log = next();
    else if (arg == "--steps")
      o.steps = parseInt(arg, next(), 0);
    else if (arg == "--seed") {
      o.seed = parseInt(arg, next(), 0);
      o.seedGiven = true;
    } else if (arg == "--lr")
      o.lr = parsePositive(arg, next());
    else if (arg == "--eval-every")
      o.evalEvery = parseInt(arg, next(), 1);
    else if (arg == "--save-every")
      o.saveEvery = parseInt(arg, next(), 1);
    else if (arg == "--threads")
      o.threads = parseInt(arg, next(), 1);
    else if (arg == "--quiet")
      o.quiet = true;
    else if (arg == "--data-order") {
      std::string v = next();
      if (v == "sequential")
        o.order = DataOrder::Sequential;
      else if (v == "random")
        o.order = DataOrder::Random;
      else
        die("--data-order: expected 'sequential' or 'random', got '" + v + "'");
    } else
      die("unknown option '" + std::string(flags.written()) +
          "' (see --help)");
  }
  bool lora = tgc_model.lora_rank > 0;
  if (!lora && !o.init.empty() && !o.resume.empty())
    die("--init and --resume both give the weights: use one");
  if (!lora && (!o.initAdapter.empty() || !o.mergeTo.empty()))
    die(std::string(!o.initAdapter.empty() ? "--init-adapter" : "--merge-to") +
        ": this executable has no LoRA adapters (compile it with tgc "
        "--lora-r)");
  if (!o.initAdapter.empty() && !o.resume.empty())
    die("--init-adapter and --resume both give the adapters: use one");
  if (o.saveDtype != DType::F32 && o.save.empty() && o.mergeTo.empty())
    die("--save-dtype needs --save FILE (or --merge-to FILE)");
  if (o.saveEvery && o.save.empty())
    die("--save-every needs --save FILE");
  if (!o.evalData.empty() && !o.evalEvery)
    die("--eval-data needs --eval-every N (when to evaluate on it)");
  return o;
}
