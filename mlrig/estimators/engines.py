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
- bitsandbytes (QLoRA's 4-bit matmul, `MatMul4Bit` in bitsandbytes/autograd/_functions.py): up to 0.43.1 its
  forward kept its input as a plain ctx attribute (`ctx.tensors = (A, B)`) although the backward never uses it;
  commit 9e75374 ("fix QLoRA mem bug: delete useless buffered activation", 2024-07-16, first in 0.43.2 of
  2024-07-23) keeps `(None, B)`. Which bitsandbytes a run has follows its framework: LitGPT pinned
  `bitsandbytes==0.42.0` from its 0.2.0 (commit 929f9c79, 2024-03-15) to 0.5.4 and moved to >=0.44 in 0.5.5
  (commit d2ed13c3, released 2025-01-08); lit-gpt before 0.2 ran 0.41. LitGPT 0.2.0 also replaced the old
  script's batch picking (lit-gpt finetune/lora.py at 8641822: `get_batch(..., longest_seq_ix if iter_num == 0
  else None)`, the longest sample first) by a shuffled DataLoader (commit 73baa2d5, "Data Refactor - Finetuning
  Scripts", 2024-03-15). See memory.qlora_kept_input_copies.
- vLLM: the V1 engine is the default from v0.8.0 (release notes, March 2025); V0 (< 0.8) does
  not chunk prefills by default, caps batches at 256 sequences, and its profile run holds the
  dummy forward's activations at max_model_len tokens (memory.py). Within V1 the profile run's
  sampler warm-up and what the profile counts changed too (`vllm_sampler_path`,
  `vllm_graphs_in_profile`, read from the vLLM wheels on PyPI).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlrig import quant
from mlrig.errors import MlrigError

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.quant import Precision
    from mlrig.vec import Num

# The release named when none is given: vLLM's newest on PyPI (0.33, Nov 2026); for the others the newest
# the calibration rows were measured on (TensorRT-LLM 1.2.0rc1, mlx-lm 0.31.3). The estimate takes the current
# behaviour for a missing version (`before(None, ...)` is False), so this is what the note names.
CURRENT = {"llama.cpp": "b7000", "trt-llm": "1.2", "transformers": "4.57", "vllm": "0.33",
           "sglang": "0.5", "lmdeploy": "0.10", "tgi": "3.3", "mlx": "0.31", "tinychat": "2.0"}

LLAMA_CPP_GRAPHS_BUILD = 3000
LLAMA_CPP_GRAPHS_DATE = (2024, 6)


@dataclass(frozen=True)
class Version:
    """A parsed engine version: a dotted release, a llama.cpp build number, or a month."""

    release: tuple[int, ...] | None = None
    build: int | None = None
    month: tuple[int, int] | None = None


@functools.lru_cache(maxsize=1024)
def parse_version(text: str | None) -> Version | None:
    """'0.6.4' / 'v0.8' / 'mlx-lm 0.20.4' / '0.7.4.dev181' -> release; 'b3000' -> build; '2024-06' -> month;
    None when nothing recognisable (a commit hash: the current behaviour is assumed).

    A pure function of the text, its answer frozen, so it is remembered per text (bounded): one plan asks
    about its engine's version dozens of times (every decode and prefill pass prices the version's host
    time and kernels), and a serving run's fluid model prices hundreds of passes."""
    if not text:
        return None
    t = text.strip().lower()
    m = re.search(r"(?<![\w.])(20\d\d)-(\d\d)(?!\d)", t)
    if m and 1 <= int(m.group(2)) <= 12:
        return Version(month=(int(m.group(1)), int(m.group(2))))
    m = re.search(r"(?<![a-z0-9])b(\d{3,5})(?!\w)", t)
    if m:
        return Version(build=int(m.group(1)))
    # PEP 440 suffixes belong to the release they follow. PEP 440 ("Public version identifiers":
    # [N!]N(.N)*[{a|b|rc}N][.postN][.devN], then an optional "+local" label) allows them together, in that
    # order: '0.7.4.dev181', '0.4.2.post4', '1.2.0rc1', '0.6.3.post2.dev308' (a nightly after 0.6.3.post1),
    # '0.7.3.dev138+g21f6ca217', '0.6.4.dev4+rocm'
    m = re.search(r"(?<![\w.])v?(\d{1,3}(?:\.\d{1,4}){1,3})(?:\.?(?:rc|a|b)\d*)?(?:\.?post\d*)?(?:\.?dev\d*)?"
                  r"(?:\+[\w.]*)?(?![\w.])", t)
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


# SGLang sizes its defaults by the card from 0.5.3 (sgl-project/sglang PR #10975, "Use more general heuristics to
# set the default value of --mem-fraction-static", merged 2025-09-27, and PR #11076, 2025-09-30, which set the
# constants below; the first release after both is taken, inferred from those dates, not read from release notes).
# python/sglang/srt/server_args.py `_handle_gpu_memory_settings`: by the card's memory (nvidia-smi's total, MiB)
# a chunked-prefill size and a CUDA-graph batch cap, then mem_fraction_static = (gpu_mem - reserved) / gpu_mem with
# reserved = 512 MiB + 1.5 MiB per chunked-prefill token (at least 2,048) + 2 MiB per CUDA-graph batch slot +
# tp x pp / 8 GiB, at least 10 GiB on cards over 60 GiB. Earlier releases used a fixed 0.88 at TP 1 (0.79-0.87
# at TP 2-16; not applied here: mlrig kept 0.88 for them, as before).
SGLANG_MEMORY_HEURISTIC = (0, 5, 3)
# (below this many GiB, chunked-prefill tokens, CUDA-graph batch cap at TP < 4, at TP >= 4); the last is the rest
SGLANG_GPU_BUCKETS: tuple[tuple[float, int, int, int], ...] = (
    (20, 2048, 8, 8), (35, 2048, 24, 80), (60, 4096, 32, 160), (90, 8192, 256, 512), (160, 8192, 256, 512),
    (float("inf"), 16384, 512, 512))
SGLANG_OLD_MEM_FRACTION = 0.88


def sglang_gpu_defaults(gpu: GPU, tp: int) -> tuple[int, int]:
    """SGLang's (--chunked-prefill-size, --cuda-graph-max-bs) defaults on this card from 0.5.3 (see above)."""
    for below_gib, chunk, bs_small, bs_large in SGLANG_GPU_BUCKETS:
        if gpu.memory_gib < below_gib:
            return chunk, bs_small if tp < 4 else bs_large
    raise AssertionError("the last bucket is unbounded")


def sglang_mem_fraction_static(gpu: GPU, tp: int, pp: int, version: str | None) -> float:
    """SGLang's default --mem-fraction-static (the share of the card holding weights and the KV pool).
    From 0.5.3 (and for the current release) it is worked out from the card as server_args.py does (see
    SGLANG_MEMORY_HEURISTIC): 0.835 on an 80 GB H100 at TP 1 ((81,562 - 13,440) / 81,562 MiB), 0.818 at TP 8,
    0.897 on a 141 GB H200 at TP 8. An SGLang issue reports 0.828 for Qwen3-32B on an H100 from a later release
    (sgl-project/sglang issue #29092, 2026-06-23), which adds a few reservations more. Before 0.5.3: 0.88."""
    if before(version, SGLANG_MEMORY_HEURISTIC):
        return SGLANG_OLD_MEM_FRACTION
    gpu_mib = gpu.memory_gib * 1024
    chunk, graph_bs = sglang_gpu_defaults(gpu, tp)
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved) / gpu_mib, 3)


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


def vllm_multi_step(text: str | None) -> bool:
    """Whether a vLLM release has multi-step scheduling (`--num-scheduler-steps`): added in 0.6.0 (PR #7000,
    vLLM blog 2024-09-05 "vLLM v0.6.0: 2.7x Throughput Improvement and 5x Latency Reduction"), removed with
    V0 in August 2025 (PR #22138, #22779: 0.10.1); not in the current release (no version given)."""
    return not before(text, (0, 6)) and before(text, (0, 10, 1))


def vllm_v1(text: str | None) -> bool:
    """vLLM's V1 engine (default from 0.8.0); current when no version is given."""
    return not before(text, (0, 8))


# LMDeploy's TurboMind scheduler (src/turbomind/models/llama/LlamaBatch.cc), by release:
# - before InternLM/lmdeploy PR #775 ("Unify prefill & decode passes", merged 2023-12-04, first in v0.1.0a2): each
#   loop of `InternalThreadEntry` runs `ContextDecode()`, which prefills every newly admitted prompt (sub-batches of
#   at most `max_context_token_num` tokens, each a pass of its own), and only then `Generate()`, the decode step of
#   all running sequences that samples the new ones' first tokens: prefills are passes of their own, the decodes
#   stall behind them, and a wave's first tokens all come at the end of its prefill (v0.1.0a1's LlamaBatch.cc);
# - from PR #775: `Forward` runs the decodes and the waiting prompts' tokens in one `forwardUnified` pass per
#   iteration, prompts taken FCFS (a partial one chunked) into a token budget that counts the decodes too
#   (`AdjustMaxInputCount`, `SequenceManager::Materialize`): `num_tokens_per_iter`, capped at
#   `max_context_token_num`, both `session_len` by default (LlamaTritonModel.cc; the converter's `max_context_token_num
#   = 1` is multiplied by `session_len`);
# - from v0.2.5 (2024-03-05) `num_tokens_per_iter` is TurbomindEngineConfig's `max_prefill_token_num`, 8,192
#   (target_model/base.py `from_engine_config`), still capped at `session_len`;
# - from v0.6.0 the cap is `max_forward_token_num` = max_prefill_token_num + max_batch_size (LlamaBatch.cc): 8,192
#   prompt tokens besides the decodes.
LMDEPLOY_UNIFIED_FROM = (0, 1, 0)  # with a pre-release suffix: from a2 (`lmdeploy_unified_iterations`)
LMDEPLOY_PREFILL_TOKEN_NUM_FROM = (0, 2, 5)
LMDEPLOY_FORWARD_TOKEN_NUM_FROM = (0, 6, 0)
LMDEPLOY_MAX_PREFILL_TOKEN_NUM = 8192


def lmdeploy_unified_iterations(text: str | None) -> bool:
    """Whether LMDeploy `text` runs TurboMind's unified prefill + decode iterations (PR #775, see above): from
    v0.1.0a2; v0.1.0a1 and the v0.0.x releases prefill in passes of their own. A series ("0.1") takes its newest
    release; no version: the current release."""
    v = parse_version(text)
    if v is None or v.release is None:
        return True
    if len(v.release) <= 2:  # a series: its newest release
        return not v.release < LMDEPLOY_UNIFIED_FROM[:len(v.release)]
    if v.release < LMDEPLOY_UNIFIED_FROM:
        return False
    pre = re.search(r"(?<![\w.])v?0\.1\.0\.?a(\d+)(?![\w.])", (text or "").strip().lower())
    return not (v.release[:3] == LMDEPLOY_UNIFIED_FROM and pre is not None and int(pre.group(1)) < 2)


# LMDeploy's default TurboMind max_batch_size when none is given: 128 (TurbomindEngineConfig, v0.2-v0.5); from
# v0.6.0 (PR #2434, 2024-09-09) chosen by the device name (lmdeploy/utils.py `get_max_batch_size`): A100 / A800 256,
# H100 / H800 512, else 128; from v0.10.0 (PR #3921, 2025-09-04) A100 / A800 384, H100 / H800 / H200 / L20Y 1,024.
LMDEPLOY_BATCH_BY_DEVICE_FROM = (0, 6, 0)
LMDEPLOY_BATCH_BY_DEVICE_V10_FROM = (0, 10, 0)
LMDEPLOY_BATCH_BY_DEVICE = {"a100": 256, "a800": 256, "h100": 512, "h800": 512}
LMDEPLOY_BATCH_BY_DEVICE_V10 = {"a100": 384, "a800": 384, "h100": 1024, "h800": 1024, "l20y": 1024, "h200": 1024}


def lmdeploy_default_max_batch_size(gpu: GPU, text: str | None) -> int:
    """LMDeploy's default TurboMind max_batch_size on `gpu` under release `text` (see above): its device-name
    table matches substrings of the lower-cased CUDA device name, taken here from the catalog's name."""
    if before(text, LMDEPLOY_BATCH_BY_DEVICE_FROM):
        return 128
    v10 = not before(text, LMDEPLOY_BATCH_BY_DEVICE_V10_FROM)
    table = LMDEPLOY_BATCH_BY_DEVICE_V10 if v10 else LMDEPLOY_BATCH_BY_DEVICE
    name = gpu.name.lower()
    return next((size for key, size in table.items() if key in name), 128)


def lmdeploy_prefill_budget(text: str | None, session_len: int, max_batch_size: int | None) -> int | None:
    """Tokens per TurboMind iteration, decodes included (see above), under LMDeploy `text` with its default
    max_prefill_token_num: None before PR #775 (prompts prefilled in passes of their own); `session_len`
    up to v0.2.4; min(8,192, session_len) up to v0.5; 8,192 + max_batch_size from v0.6."""
    if not lmdeploy_unified_iterations(text):
        return None
    if before(text, LMDEPLOY_PREFILL_TOKEN_NUM_FROM):
        return session_len
    if before(text, LMDEPLOY_FORWARD_TOKEN_NUM_FROM):
        return min(LMDEPLOY_MAX_PREFILL_TOKEN_NUM, session_len)
    return LMDEPLOY_MAX_PREFILL_TOKEN_NUM + (max_batch_size or 0)


# CUDA / HIP graphs in the serving engines' decode (performance.eager_decode_layer_s prices a step without them).
# vLLM V0 (< 0.8) replays a decode step from a captured graph only while every sequence's context is at most
# `max_seq_len_to_capture` (EngineArgs default 8192; vllm/config.py ModelConfig: "Maximum sequence len covered by
# CUDA graphs. When a sequence has context length larger than this, we fall back to eager mode"); its capture
# sizes reach max_num_seqs (0.6: `_BATCH_SIZES_TO_CAPTURE` up to 8192, "the actual sizes to capture will be
# determined by the model, depending on the model's max_num_seqs", vllm/worker/model_runner.py), so no batch runs
# eager there. vLLM V1 (piecewise graphs, attention outside them) captures batches up to 512 (`cuda_graph_sizes`
# default [512]; later `max_cudagraph_capture_size`, at most 512) whatever the context: larger batches run eager.
VLLM_V0_MAX_SEQ_LEN_TO_CAPTURE = 8192
VLLM_V1_MAX_CAPTURE_SIZE = 512
# Engines whose decode step is a graph replay by default and runs kernel by kernel without it (vLLM
# --enforce-eager, SGLang --disable-cuda-graph, TGI's vLLM-derived CUDA graphs). TensorRT-LLM and LMDeploy run
# C++ runtimes whose per-layer host cost (efficiency.LAYER_OVERHEAD_S) was fitted on rows without graphs: no change.
GRAPH_DECODE_ENGINES = frozenset({"vllm", "sglang", "tgi"})


def decode_runs_eager(engine: str, version: str | None, cuda_graphs: bool, batch: Num, context: Num) -> Num:
    """Whether a decode step of `batch` sequences at `context` tokens runs without CUDA / HIP graphs: the plan
    says so (`workload.cuda_graphs` false), or vLLM's own capture does not cover the step (V0: a context above
    VLLM_V0_MAX_SEQ_LEN_TO_CAPTURE; V1: a batch above VLLM_V1_MAX_CAPTURE_SIZE). False for the engines outside
    GRAPH_DECODE_ENGINES. Element-wise for arrays of batches / contexts."""
    if engine not in GRAPH_DECODE_ENGINES:
        return False
    if not cuda_graphs:
        return True
    if engine != "vllm":
        return False
    if vllm_v1(version):
        return batch > VLLM_V1_MAX_CAPTURE_SIZE
    return context > VLLM_V0_MAX_SEQ_LEN_TO_CAPTURE


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


# vLLM V1's profile run (gpu_model_runner.profile_run) ends with `_dummy_sampler_run`: logits for
#    min(max_num_seqs, max_num_batched_tokens) rows x vocab, with top-k = vocab - 1 and top-p = 0.9 on
#    every row. How many bytes per logit element that warm-up holds at its peak depends on the top-k/top-p
#    implementation (vllm/v1/sample/ops/topk_topp_sampler.py in the vLLM wheels on PyPI, 0.10.1 ... 0.33.0):
#    - "sort" (torch-native `apply_top_k_top_p`): `logits.sort()` of the fp32 logits. PyTorch's CUDA sort of
#      rows longer than 2,048 (aten/src/ATen/native/cuda/Sort.cu, `segmented_sort_pairs`) writes fp32
#      values (4 B) and int64 indices (8 B) from an int64 arange it materialises (8 B), and CUB's radix
#      sort of pairs keeps alternate key and value buffers (4 + 8 B): 32 B, on top of the model's bf16
#      logits (2 B, `compute_logits`) and their fp32 copy (4 B, `Sampler.forward`): 38 B per element.
#      The llm-d-planner vLLM 0.11.0 rows bear it out: "torch peak memory increase" 5.64 GiB for Qwen3-32B
#      (m0083, 38 B x 1,024 x 151,936 = 5.51 GiB + the dummy forward's hidden states), 4.76 Llama-3.1-8B
#      (m0073), 5.56 Qwen3-0.6B (m0078), 7.38 gpt-oss-20b/120b (m0058/m0063): within 1 % each.
#      The default from 0.8 to 0.16 (read in 0.10.1-0.16.0; 0.8-0.9 taken to be the same) unless
#      FlashInfer's sampler runs: up to 0.11 vLLM V1 uses FlashInfer whenever `flashinfer.sampling`
#      imports (VLLM_USE_FLASHINFER_SAMPLER unset means on in V1), but flashinfer-python is only the
#      wheel's `flashinfer` extra (wheel METADATA, 0.10.1 and 0.11.0), so a plain `pip install vllm`
#      sorts; from 0.12 FlashInfer's sampler is opt-in (=1) and flashinfer-python a dependency.
#    - "flashinfer": `top_k_top_p_sampling_from_logits` (flashinfer/sampling.py, 0.2.11 and 0.3.1) masks
#      into a new fp32 tensor and takes its softmax: 2 + 4 + 4 + 4 = 14 B. Say it in the version text
#      ("0.10.1+flashinfer") when the run's log has "Using FlashInfer for top-p & top-k sampling" (the
#      DLVLLM-* vLLM 0.10.1 logs do).
#    - "triton" (0.17 on, still in 0.33): `apply_top_k_top_p_triton` masks the fp32 logits in place with
#      one scratch row per SM; then softmax (4 B) and `random_sample`'s exponential draws (4 B):
#      2 + 4 + 4 + 4 = 14 B, plus the scratch rows (VLLM_TRITON_SCRATCH_ROWS). The llm-d-planner vLLM
#      0.19.0 rows: 1.89 GiB for Llama-3.1-8B (m0107; 14 B -> 1.84 with scratch and hidden states),
#      2.21 Qwen2.5-7B / Qwen3-8B (m0116/m0131; 2.17), 1.52 phi-4 (m0156; 1.47).
VLLM_SAMPLER_BYTES_PER_LOGIT = {"sort": 38.0, "flashinfer": 14.0, "triton": 14.0}
# `_topk_topp_kernel`'s per-program buffer: min(next_pow2(min(SMs, rows)), SMs) rows x vocab x fp32
#    (topk_topp_triton.py); 108-142 SMs on the GPUs vLLM serves from: 128 taken.
VLLM_TRITON_SCRATCH_ROWS = 128


def vllm_sampler_path(text: str | None) -> str:
    """Which top-k/top-p implementation vLLM V1's sampler warm-up runs (see VLLM_SAMPLER_BYTES_PER_LOGIT):
    "flashinfer" when the version text names it, "triton" from 0.17 (and for the current release when no
    version is given), else "sort"."""
    if "flashinfer" in (text or "").lower():
        return "flashinfer"
    return "sort" if before(text, (0, 17)) else "triton"


def vllm_graphs_in_profile(text: str | None) -> bool:
    """vLLM 0.18 to 0.26 capture CUDA graphs inside the memory profile (gpu_worker.determine_available_memory
    calls `profile_cudagraph_memory` within `memory_profiling`), so what the capture leaves outside
    PyTorch's allocator (NCCL / custom all-reduce registrations for the captured collectives) counts as
    non-torch memory. Before, graphs were captured after the KV cache was allocated (the DLVLLM-* 0.10.1
    logs: "Graph capturing finished ... took 0.65 GiB" after "GPU KV cache size"); from 0.27 the graph
    profile runs after `memory_profiling` has measured (its non-KV memory is then the free memory consumed
    since start-up plus the transient torch peak, vllm/utils/mem_utils.py), so the current release (0.33,
    the default) is back outside. Read from the vLLM wheels on PyPI (0.17.0 ... 0.33.0); the 0.27+ non-torch
    figure is taken from the pre-0.18 rows, not measured."""
    return not before(text, (0, 18)) and before(text, (0, 27))


def transformers_full_logits(text: str | None) -> bool:
    """transformers < 4.45 computes logits for every prompt token in the prefill."""
    return before(text, (4, 45))


def transformers_legacy_cache(text: str | None) -> bool:
    """transformers < 4.42: `generate` holds the previous step's KV tuples while the next are built
    (two copies of the cache at the peak; PR #30536, see the module docstring)."""
    return before(text, (4, 42))


# LitGPT releases and months where its QLoRA behaviour changed (module docstring): 0.2.0 (2024-03-15, shuffled
# DataLoader, bitsandbytes 0.42.0 pinned) and 0.5.5 (2025-01-08, bitsandbytes >= 0.44).
LITGPT_DATALOADER = ((0, 2), (2024, 3))
LITGPT_BNB_044 = ((0, 5, 5), (2025, 1))
# bitsandbytes 0.43.2 (2024-07-23) stopped keeping the 4-bit matmul's input (module docstring).
BNB_KEEPS_INPUT_UNTIL = (2024, 7)


def _older(text: str | None, release: tuple[int, ...], month: tuple[int, int]) -> bool | None:
    """Whether a version (a dotted release or a month) is older than the release / month given; None when
    the text gives neither (the current release is then assumed)."""
    v = parse_version(text)
    if v is None:
        return None
    if v.release is not None:
        return v.release < release
    if v.month is not None:
        return v.month < month
    return None


def litgpt_era(text: str | None) -> str:
    """LitGPT's QLoRA era for a version or month: "lit-gpt" (before 0.2: bitsandbytes 0.41, the longest sample
    trained first), "bnb-0.42" (0.2 to 0.5.4: bitsandbytes 0.42.0, shuffled batches) or "current" (0.5.5 on,
    and when no version is given)."""
    if _older(text, *LITGPT_DATALOADER):
        return "lit-gpt"
    if _older(text, *LITGPT_BNB_044):
        return "bnb-0.42"
    return "current"


def bnb_keeps_4bit_input(text: str | None) -> bool:
    """Whether a run dated by `text` (a month; an HF-stack engine's own release numbers say nothing about its
    bitsandbytes) has a bitsandbytes that keeps the 4-bit matmul's input (< 0.43.2, July 2024). No month: the
    current release, which does not."""
    v = parse_version(text)
    return v is not None and v.month is not None and v.month < BNB_KEEPS_INPUT_UNTIL


def trt_llm_pre_xqa(text: str | None) -> bool:
    return before(text, (0, 8))


# TensorRT-LLM 1.0 made the PyTorch backend the default: `tensorrt_llm.LLM` is `class LLM(_TorchLLM)` and the
# TensorRT-engine path moved to `tensorrt_llm._tensorrt_engine` (tensorrt_llm/llmapi/llm.py, 1.x: "Please use
# 'from tensorrt_llm._tensorrt_engine import LLM' instead to use the TensorRT backend").
TRTLLM_PYTORCH_DEFAULT = (1, 0)


def trtllm_tensorrt_engine(text: str | None) -> bool:
    """Whether a TensorRT-LLM run of this release used a TensorRT engine (examples' convert_checkpoint.py +
    trtllm-build, the workflow before 1.0) rather than the PyTorch backend (the default from 1.0). Unknown
    versions: the current release (PyTorch backend)."""
    return before(text, TRTLLM_PYTORCH_DEFAULT)


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
