"""Engine releases whose behaviour changed, parsed from `workload.engine_version`.

Users write versions as the project does: "0.6.4", "v0.8.0", "4.38", "b3000" (llama.cpp build),
"2024-06" (a build's month), "mlx-lm 0.20.4". With no version the engine's current release is
assumed (said in a note). The behaviours (each with its source):
- llama.cpp: CUDA graphs for single-GPU decode (ggml-org/llama.cpp PR #6766, opened 2024-04-19 by
  NVIDIA: "10-15 % overall speedup" on Llama-2-7B) launch a token's kernels as one graph; builds
  before ~b3000 (mid-2024) launched every kernel one by one (efficiency key "llama.cpp-2024"). The
  boundary is the one the calibration rows support: the XD-* rows (builds b2795-b2843) fit the
  per-kernel launch overhead, the scoreboard rows (C15013-*, 2025) the graph one.
- TensorRT-LLM: the XQA kernel for GQA/MQA decode attention became the default in v0.8
  (docs/source/blogs/XQA-kernel.md, Jan 2024); before it a KV head was read once per query head
  (efficiency key "trt-llm-2023").
- transformers: `generate` computes logits for the last prompt position only since v4.45
  (`num_logits_to_keep`, PR #31292, Sept 2024); before, the prefill's logits are
  prompt x vocab x fp32 (a 30k-token prompt of a 128k-vocab model holds 14.6 GiB of them).
  Before v4.42 `generate` kept the KV cache as tuples of tensors (the "legacy" format) and held the
  previous step's tuple while the forward built the next one with `torch.cat`, so two copies of the
  cache were alive at each step's peak (huggingface/transformers PR #30536, "Reduce by 2 the memory
  requirement in `generate()`": `generate` keeps one `DynamicCache` from start to end). The PR was
  ready for merge in the second half of May 2024, after v4.41.0 (17 May); v4.42 (June 2024) is taken
  as the first release with it - inferred from those dates, not read from release notes.
- TinyChat (mit-han-lab/llm-awq): release 2.0 (PR #244, commit e4bdec2, 2024-12-12) brought a new W4A16
  GEMM (awq/kernels/csrc/quantization_new/gemm/gemm_cuda.cu) whose tensor-core MMAs accumulate in FP16
  (`mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16`; README: "For W4A16 GEMM, we introduce FP16
  accumulation when applicable"); the earlier kernel (awq/kernels/csrc/quantization/gemm_cuda_gen.cu)
  accumulates in FP32 (`...f32.f16.f16.f32`), half the tensor rate on GeForce cards. Versions before 2.0
  (the README's "TinyChat (Legacy)") are the efficiency key "tinychat-2024".
- vLLM: the V1 engine is the default from v0.8.0 (release notes, March 2025); V0 (< 0.8) does
  not chunk prefills by default, caps batches at 256 sequences, and its profile run holds the
  dummy forward's activations at max_model_len tokens (memory.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlrig import quant
from mlrig.errors import MlrigError

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.quant import Precision

# The release assumed when none is given (the current one as of the catalog date, Nov 2026).
CURRENT = {"llama.cpp": "b7000", "trt-llm": "1.0", "transformers": "4.57", "vllm": "0.11",
           "sglang": "0.5", "lmdeploy": "0.10", "tgi": "3.3", "mlx": "0.28", "tinychat": "2.0"}

LLAMA_CPP_GRAPHS_BUILD = 3000
LLAMA_CPP_GRAPHS_DATE = (2024, 6)


@dataclass(frozen=True)
class Version:
    """A parsed engine version: a dotted release, a llama.cpp build number, or a month."""

    release: tuple[int, ...] | None = None
    build: int | None = None
    month: tuple[int, int] | None = None


def parse_version(text: str | None) -> Version | None:
    """'0.6.4' / 'v0.8' / 'mlx-lm 0.20.4' -> release; 'b3000' -> build; '2024-06' -> month; None when
    nothing recognisable (a commit hash: the current behaviour is assumed)."""
    if not text:
        return None
    t = text.strip().lower()
    m = re.search(r"(?<![\w.])(20\d\d)-(\d\d)(?!\d)", t)
    if m and 1 <= int(m.group(2)) <= 12:
        return Version(month=(int(m.group(1)), int(m.group(2))))
    m = re.search(r"(?<![a-z0-9])b(\d{3,5})(?!\w)", t)
    if m:
        return Version(build=int(m.group(1)))
    m = re.search(r"(?<![\w.])v?(\d{1,3}(?:\.\d{1,4}){1,3})(?![\w.])", t)
    if m:
        return Version(release=tuple(int(x) for x in m.group(1).split(".")))
    return None


def before(text: str | None, release: tuple[int, ...]) -> bool:
    """True when the version is a dotted release older than `release` (unknown versions: False)."""
    v = parse_version(text)
    return v is not None and v.release is not None and v.release < release


def llama_cpp_has_graphs(text: str | None) -> bool:
    v = parse_version(text)
    if v is None:
        return True
    if v.build is not None:
        return v.build >= LLAMA_CPP_GRAPHS_BUILD
    if v.month is not None:
        return v.month >= LLAMA_CPP_GRAPHS_DATE
    return True


# vLLM's custom all-reduce on AMD Instinct (gfx94x) over Infinity Fabric: upstream from 0.8.3
# (vllm-project/vllm PR #14125, enable check fixed for gfx94x by PR #16010 on 2025-04-03; the first
# release after both is taken, inferred from those dates, not read from release notes); AMD's fork
# (ROCm/vllm, the rocm/vllm and rocm/vllm-dev images) since ROCm/vllm PR #27 (2024-05-30).
VLLM_ROCM_CUSTOM_ALLREDUCE = (0, 8, 3)


def vllm_custom_allreduce_on_amd(text: str | None) -> bool:
    """Whether this vLLM build runs its own peer-to-peer all-reduce on AMD Infinity Fabric (else RCCL's
    ring): releases from 0.8.3, the current one when no version is given, and builds of AMD's fork,
    written as the image or repository names them ("rocm/vllm-dev 0.6.6", "ROCm/vllm 0.6.6"). Upstream
    releases before 0.8.3 log "Disabled the custom all-reduce kernel because it is not supported on AMD
    GPUs" at start-up (vLLM config.py, 0.6.x)."""
    if text and "rocm/vllm" in text.lower():
        return True
    return not before(text, VLLM_ROCM_CUSTOM_ALLREDUCE)


# TensorRT-LLM picks its all-reduce per call from 0.12 (AllReduceStrategy AUTO: its own one-shot /
# two-shot custom kernel over NVLink for small messages, NCCL otherwise): the trtllm-build knob
# `use_custom_all_reduce` was removed ("Update TensorRT-LLM", NVIDIA/TensorRT-LLM PR #2008, 2024-07-23);
# a maintainer: "the use_custom_all_reduce knob had been removed from trtllm-build command since 0.12
# release. Now trtllm will select the nccl native all-reduce and the custom all-reduce plugin
# automatically by internal strategy" (NVIDIA/TensorRT-LLM issue #1601, 2024-11-18).
TRTLLM_AUTO_ALLREDUCE = (0, 12)


def trtllm_custom_allreduce(text: str | None) -> bool:
    """Whether TensorRT-LLM's decode all-reduces over NVLink are its own peer-to-peer kernel (from 0.12, and
    the current release when no version is given); earlier builds are taken as NCCL's ring (the knob was
    opt-in per engine build, and the calibration's TRT-LLM 0.5 / 0.6.1 TP rows were fitted that way)."""
    return not before(text, TRTLLM_AUTO_ALLREDUCE)


def vllm_v1(text: str | None) -> bool:
    """vLLM's V1 engine (default from 0.8.0); current when no version is given."""
    return not before(text, (0, 8))


# vLLM V1 and SGLang size their defaults by the card: 70 GiB or more is "big" (vLLM engine/arg_utils.py
# `_set_default_args`, SGLang server_args.py).
BIG_GPU_GIB = 70.0


def vllm_big_gpu_defaults(gpu: GPU) -> bool:
    """Whether vLLM V1 takes its large defaults on this GPU (8,192 batched tokens for the server, 1,024
    sequences): GPUs with >= 70 GiB except the A100 (vLLM engine/arg_utils.py `_set_default_args`,
    checked in its tests/engine/test_arg_utils.py: `device_memory >= 70 GiB and "a100" not in
    device_name`; "large max_num_batched_tokens for A100 reduces throughput"). An A100 80GB runs
    2,048 / 256: vLLM 0.10.1 logs "Chunked prefill is enabled with max_num_batched_tokens=2048" on one
    (the DLVLLM-* runs' startup logs)."""
    return gpu.memory_gib >= BIG_GPU_GIB and "a100" not in gpu.name.lower()


def transformers_full_logits(text: str | None) -> bool:
    """transformers < 4.45 computes logits for every prompt token in the prefill."""
    return before(text, (4, 45))


def transformers_legacy_cache(text: str | None) -> bool:
    """transformers < 4.42: `generate` holds the previous step's KV tuples while the next are built
    (two copies of the cache at the peak; PR #30536, see the module docstring)."""
    return before(text, (4, 42))


def trt_llm_pre_xqa(text: str | None) -> bool:
    return before(text, (0, 8))


def tinychat_legacy(text: str | None) -> bool:
    """TinyChat before 2.0: its W4A16 GEMM accumulates in FP32 (module docstring)."""
    return before(text, (2, 0))


# ---- engine family keys ----------------------------------------------------------------------------
ENGINE_NAMES = ("vllm, sglang, trt-llm, lmdeploy, tgi, llama.cpp, ollama, mlx, transformers, exllamav2, mlc, "
                "gpt-fast, tinychat")


def engine_family(engine: str | None, precision: str | Precision, gpu: GPU, version: str | None = None) -> str:
    """Normalise an engine name (and release, see mlrig/estimators/engines.py) to the efficiency
    tables' family key; with no engine, llama.cpp for GGUF, Apple and CPU, else vLLM (the plan always
    names one: `planner.default_engine` has the full rule). Engines that cannot run on
    the hardware are refused (MLX is Apple-only; the CUDA serving engines do not run on Apple GPUs)."""
    e = (engine or "").lower().replace(" ", "").replace("_", "-")
    if not e:
        e = "llama.cpp" if (gpu.hardware_class in ("apple", "cpu") or _llama_cpp_only(precision)) else "vllm"
    if e in ("llama.cpp-2024", "trt-llm-2023", "tinychat-2024"):
        # The efficiency tables' keys for old releases, still accepted from internal callers
        # (mlrig.validation.speed); users give --engine-version instead (engines.py).
        return e
    apple = gpu.hardware_class == "apple"
    if e.startswith("mlx"):
        if not apple:
            raise MlrigError(f"MLX runs on Apple silicon only, not on {gpu.name}; use --engine llama.cpp or vllm")
        return "mlx"
    if e == "llama.cpp-metal" or (e.startswith("llama") or e in ("llamacpp", "ollama", "lmstudio", "lm-studio",
                                                                  "gguf", "llamafile")):
        if apple or "metal" in e:
            return "llama.cpp-metal"
        return "llama.cpp" if llama_cpp_has_graphs(version) else "llama.cpp-2024"
    for key, fam in (
        ("vllm", "vllm"),
        ("sglang", "sglang"),
        ("tensorrt", "trt-llm"),
        ("trt", "trt-llm"),
        ("lmdeploy", "lmdeploy"),
        ("turbomind", "lmdeploy"),
        ("tgi", "tgi"),
        ("text-generation-inference", "tgi"),
        ("transformers", "transformers"),
        ("hf", "transformers"),
        ("pytorch", "transformers"),
        ("exllama", "exllamav2"),
        ("tabby", "exllamav2"),
        ("mlc", "mlc"),
        ("gpt-fast", "gpt-fast"),
        ("gptfast", "gpt-fast"),
        ("torchao", "gpt-fast"),
        ("tinychat", "tinychat"),
    ):
        if e.startswith(key):
            if apple and fam in ("vllm", "trt-llm", "lmdeploy", "tgi", "exllamav2", "gpt-fast", "tinychat"):
                raise MlrigError(f"{engine} needs a CUDA/ROCm GPU and does not run on {gpu.name}; "
                                 "use --engine llama.cpp or mlx")
            if fam == "trt-llm" and gpu.hardware_class in ("amd", "apple", "intel", "cpu", "tpu"):
                raise MlrigError(f"TensorRT-LLM runs on NVIDIA GPUs only, not on {gpu.name}; use --engine vllm")
            if fam == "trt-llm" and trt_llm_pre_xqa(version):
                return "trt-llm-2023"
            if fam == "tinychat" and tinychat_legacy(version):
                return "tinychat-2024"
            return fam
    raise MlrigError(f"unknown engine {engine!r}; use one of {ENGINE_NAMES}")


def _llama_cpp_only(precision: str | Precision) -> bool:
    """A GGUF block format (only llama.cpp loads it); an unreadable precision is not one."""
    try:
        return quant.parse_precision(precision).llama_cpp_only
    except MlrigError:
        return False
