"""Engine releases whose behaviour changed, parsed from `workload.engine_version`.

Users write versions as the project does: "0.6.4", "v0.8.0", "4.38", "b3000" (llama.cpp build),
"2024-06" (a build's month), "mlx-lm 0.20.4". With no version the engine's current release is
assumed (said in a note). The behaviours (each with its source):
- llama.cpp: CUDA graphs for single-GPU decode (ggml-org/llama.cpp PR #6766, opened 2024-04-19 by
  NVIDIA: "10-15 % overall speedup" on Llama-2-7B) launch a token's kernels as one graph; builds
  before ~b3000 (mid-2024) launched every kernel one by one (efficiency key "llama.cpp-2024"). The
  boundary is the one the calibration rows support: the XD-* rows (builds b2795-b2843) fit the
  per-kernel launch overhead, the scoreboard rows (C15013-*, 2025) the graph one.
- llama.cpp on AMD GPUs: the "+vulkan" label selects the Vulkan build (the current CUDA builds' figures); without
  it the HIP (ROCm) build, efficiency key "llama.cpp-hip" (`llama_cpp_backend`), which replays no graphs.
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
    from mlrig.catalog.models import ModelArch
    from mlrig.quant import Precision
    from mlrig.vec import Num
    from mlrig.workload import Plan

# The release named when none is given: each engine's newest public release, read 2026-11-25 (`pip index versions`
# against PyPI, and the project's docs search): vLLM 0.33.0 (PyPI, 2026-11), SGLang 0.5.23 (PyPI, 2026-10: still the
# 0.5 series), TensorRT-LLM 1.2.1 (PyPI, 2026-04), transformers 5.24.0 (PyPI, 2026-11), LMDeploy 0.18.0 (PyPI,
# 2026-09), mlx-lm 0.32.2 (PyPI, 2026-10), TGI 3.3.5 (its last release, 2025-09-02; the repository has been in
# maintenance mode since 2025-12-11, README history), llama.cpp b12429 (ggml-org's server-cuda image of 2026-11-16,
# as github.com/eniewold/llama-cpp-runpod/releases/tag/b12429 records it). ollama has no entry: it is priced as
# llama.cpp's build. The estimate takes the current behaviour for a missing version (`before(None, ...)` is False),
# so this is what the note names; only LMDeploy's PyTorch engine is priced at this version (planner: "0.18+pytorch").
CURRENT = {"llama.cpp": "b12429", "trt-llm": "1.2", "transformers": "5.24", "vllm": "0.33",
           "sglang": "0.5", "lmdeploy": "0.18", "tgi": "3.3", "mlx": "0.32", "tinychat": "2.0"}

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
    '0.9.x' -> release (0, 9), the series; None when nothing recognisable (a commit hash, 'garbage': refused for
    the engines mlrig dates, `engine_version_problem`).

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
    m = re.search(r"(?<![\w.])v?(\d{1,3}(?:\.\d{1,4}){1,3})(?:\.x)?(?:\.?(?:rc|a|b)\d*)?(?:\.?post\d*)?(?:\.?dev\d*)?"
                  r"(?:\+[\w.]*)?(?![\w.])", t)
    if m:
        return Version(release=tuple(int(x) for x in m.group(1).split(".")))
    return None


def before(text: str | None, release: tuple[int, ...]) -> bool:
    """True when the version is a dotted release older than `release` (unknown versions: False)."""
    v = parse_version(text)
    return v is not None and v.release is not None and v.release < release


def series_before(text: str | None, release: tuple[int, ...]) -> bool:
    """`before`, where a version given as a series ("0.5", the release named when none is given: CURRENT) stands
    for that series' newest release: older than `release` only where the whole series is ("0.5" is not before
    0.5.3, "0.4" is before 0.5.3 but not before 0.4.8)."""
    v = parse_version(text)
    if v is not None and v.release is not None and len(v.release) <= 2:
        return v.release < release[:len(v.release)]
    return before(text, release)


# llama.cpp's CUDA backend turns its graphs off on GPUs below compute capability 8.0 whatever the build:
#    ggml-cuda.cu, `if (ggml_cuda_info().devices[...].cc < GGML_CUDA_CC_AMPERE) ...disable_due_to_gpu_arch = true`
#    (in ggml_backend_cuda_graph_compute since the graphs came in, PR #6766; in ggml_cuda_graph_set_enabled in later
#    trees), so Volta, Turing and older cards launch every kernel one by one. ggml-org/llama.cpp commit
#    3f08ef2c519710831cb68c8dc2c2693e6bb5bf81, "Enable CUDA graphs on volta+turing (#25749)" (merged 2026-07-16),
#    lowers the line to Volta; its build is b10042 (llama.cpp's build number is the commit count, printed as
#    "version: 10042 (3f08ef2c5)"; the release tag b10042 is that commit, as downstream pins of the tag record
#    it: LLAMA_TAG="b10042", LLAMA_COMMIT="3f08ef2c5197..."). So builds from b10042 and month labels from 2026-07
#    give Volta and Turing their graphs back; Pascal and older stay without them.
LLAMA_CPP_VOLTA_GRAPHS_BUILD = 10042
LLAMA_CPP_VOLTA_GRAPHS_DATE = (2026, 7)
LLAMA_CPP_NO_GRAPH_ARCHITECTURES = ("Volta", "Turing", "Pascal", "Maxwell", "Kepler")


def llama_cpp_graphs_on_gpu(gpu: GPU, text: str | None) -> bool:
    """Whether llama.cpp's CUDA build replays its decode graph on this NVIDIA GPU (see LLAMA_CPP_VOLTA_GRAPHS_BUILD):
    not below compute capability 8.0 (Volta, Turing and older), except Volta / Turing from build b10042 (a month
    label from July 2026). With no version the current build (CURRENT, past b10042) is assumed: graphs on Volta and
    Turing."""
    arch = str(gpu.architecture or "")
    if gpu.vendor != "NVIDIA" or not arch.startswith(LLAMA_CPP_NO_GRAPH_ARCHITECTURES):
        return True
    if not arch.startswith(("Volta", "Turing")):
        return False
    v = parse_version(text)
    if v is None:
        return llama_cpp_volta_graphs_build(CURRENT["llama.cpp"])
    if v.build is not None:
        return v.build >= LLAMA_CPP_VOLTA_GRAPHS_BUILD
    return v.month is not None and v.month >= LLAMA_CPP_VOLTA_GRAPHS_DATE


def llama_cpp_volta_graphs_build(text: str) -> bool:
    """Whether a build label ("b12429") is at or past LLAMA_CPP_VOLTA_GRAPHS_BUILD."""
    v = parse_version(text)
    return v is not None and v.build is not None and v.build >= LLAMA_CPP_VOLTA_GRAPHS_BUILD


def llama_cpp_has_graphs(text: str | None) -> bool:
    v = parse_version(text)
    if v is None:
        return True
    if v.build is not None:
        return v.build >= LLAMA_CPP_GRAPHS_BUILD
    if v.month is not None:
        return v.month >= LLAMA_CPP_GRAPHS_DATE
    return True


# llama.cpp on AMD GPUs runs one of two backends: HIP (ROCm; the CUDA backend built with hipcc) or Vulkan. The
#    version label names it as TensorRT-LLM's "+pytorch" does ("b5000+vulkan", "b5000+rocm" / "+hip"); with no
#    label an AMD card is taken to run the HIP build: Ollama, a common way llama.cpp's kernels reach users, runs
#    the AMD GPUs it lists through ROCm and only the others through Vulkan (docs.ollama.com/gpu, read 2026-11-25,
#    "AMD Radeon": "Ollama supports the following AMD GPUs via the ROCm library", "Additional AMD GPU support is
#    provided by the Vulkan Library"); LM Studio and llama.cpp's own release binaries also ship Vulkan builds, so a
#    user on those should say "+vulkan".
LLAMA_CPP_VULKAN_LABELS = ("vulkan",)


def llama_cpp_backend(gpu: GPU, version: str | None) -> str:
    """llama.cpp's GPU backend on this card: "hip" on AMD GPUs unless the version label says "+vulkan"
    (LLAMA_CPP_VULKAN_LABELS), else "cuda" on NVIDIA and "other" (Vulkan / SYCL / Metal / CPU) elsewhere."""
    if gpu.vendor == "AMD" and gpu.hardware_class == "amd":  # an AMD GPU, not an EPYC / Ryzen CPU
        label = (version or "").lower()
        return "vulkan" if any(v in label for v in LLAMA_CPP_VULKAN_LABELS) else "hip"
    return "cuda" if gpu.vendor == "NVIDIA" else "other"


# SGLang sizes its defaults by the card from 0.5.3 (sgl-project/sglang PR #10975, "Use more general heuristics to
# set the default value of --mem-fraction-static", merged 2025-09-27, and PR #11076, 2025-09-30, which set the
# constants below; the first release after both is taken, inferred from those dates, not read from release notes).
# python/sglang/srt/server_args.py `_handle_gpu_memory_settings`: by the card's memory (nvidia-smi's total, MiB)
# a chunked-prefill size and a CUDA-graph batch cap, then mem_fraction_static = (gpu_mem - reserved) / gpu_mem with
# reserved = 512 MiB + 1.5 MiB per chunked-prefill token (at least 2,048) + 2 MiB per CUDA-graph batch slot +
# tp x pp / 8 GiB, at least 10 GiB on cards over 60 GiB. Earlier releases (server_args.py `__post_init__`, read in
# the PyPI wheel of each release named; `gpu_mem` the card's total in MiB) had other rules:
# SGLANG_OLD_MEM_FRACTION_ERAS.
SGLANG_MEMORY_HEURISTIC = (0, 5, 3)
# (below this many GiB, chunked-prefill tokens, CUDA-graph batch cap at TP < 4, at TP >= 4); the last is the rest.
# The 20-35 GiB tier (A10, A10G, L4, RTX 4090 / 5090) changed twice within 0.5 (read in the PyPI wheels: 16 slots at
# TP < 4 in 0.5.3, 0.5.3.post1 and 0.5.4; 24 in 0.5.5, 0.5.7, 0.5.8.post1, 0.5.9, 0.5.10, 0.5.13, 0.5.16 and 0.5.19;
# from 0.5.20 (read at 0.5.20, 0.5.21, 0.5.23: sglang/srt/arg_groups/memory_hook.py `handle_gpu_memory_settings`,
# "32GB Blackwell (RTX 5090) can hold decode cuda graphs well past bs=24") 4,096 tokens and 48 / 160 slots). The
# other tiers are the same in every one of those releases. As (first release, buckets), newest first.
_SGLANG_BUCKETS_REST: tuple[tuple[float, int, int, int], ...] = (
    (60, 4096, 32, 160), (90, 8192, 256, 512), (160, 8192, 256, 512), (float("inf"), 16384, 512, 512))
SGLANG_GPU_BUCKET_ERAS: tuple[tuple[tuple[int, ...], tuple[tuple[float, int, int, int], ...]], ...] = (
    ((0, 5, 20), ((20, 2048, 8, 8), (35, 4096, 48, 160), *_SGLANG_BUCKETS_REST)),
    ((0, 5, 5), ((20, 2048, 8, 8), (35, 2048, 24, 80), *_SGLANG_BUCKETS_REST)),
    (SGLANG_MEMORY_HEURISTIC, ((20, 2048, 8, 8), (35, 2048, 16, 80), *_SGLANG_BUCKETS_REST)),
)
# 0.5.5 to 0.5.19, the table most of the 0.5 series ran (kept under its old name for readers of earlier notes)
SGLANG_GPU_BUCKETS = SGLANG_GPU_BUCKET_ERAS[1][1]
# Prefill ("piecewise") CUDA graphs are on by default from 0.5.10 (server_args.py: 0.5.9 has
# `enable_piecewise_cuda_graph: bool = False`, 0.5.10 `disable_piecewise_cuda_graph: bool = False`, turned off by
# `_handle_piecewise_cuda_graph` on non-CUDA devices, with torch.compile, speculative decoding, DP attention, PP,
# LoRA, multimodal models and a few more). `_handle_gpu_memory_settings` then reserves, before its 10 GiB floor,
# 8 MiB per captured prefill size (`len(self.piecewise_cuda_graph_tokens) * 8`; the sizes 4..32 step 4, 48..256
# step 16, 288..512 step 32, 576..1024 step 64, 1280..4096 step 256, 4608.. step 512, up to the chunked-prefill
# size: 42 at 2,048 tokens, 50 at 4,096, 58 at 8,192, 74 at 16,384) or 1.5 GiB flat with an MLA model ("For MLA
# backend the memory overhead is much higher than expected with fa3"). Read at 0.5.10, 0.5.13; the same in
# 0.5.23's memory_hook.py `reserve_for_graph_mb`.
SGLANG_PREFILL_GRAPHS = (0, 5, 10)
SGLANG_PREFILL_GRAPH_MIB_PER_SIZE = 8
SGLANG_PREFILL_GRAPH_MLA_MIB = 1536
SGLANG_OLD_MEM_FRACTION = 0.88
# Releases before 0.5.3, newest first, as (first release, rule):
# - "card" 0.4.7.post1 to 0.5.2 (read at 0.4.7.post1, 0.4.8, 0.4.9, 0.4.10, 0.5.1, 0.5.2; 0.4.7.post1 already ships
#   0.4.8's memory defaults: `sglang_era_version`): mem_fraction_static = round((gpu_mem -
#   reserved) / gpu_mem, 3), reserved by card: (2.8 + tp x pp / 10) GiB below 35 GiB, (9.5 + tp x pp / 2) GiB
#   below 90 GiB, (12 + tp x pp / 2) GiB below 160 GiB, 32 GiB above;
# - "tp-big" 0.4.6 and 0.4.7 (read at 0.4.6, 0.4.7): the TP table below on cards of at most 81,920 MiB, above it
#   (gpu_mem - 13 GiB) / gpu_mem (H200: 0.907; MI300X: 0.932);
# - "tp" 0.4.0 to 0.4.5 (read at 0.4.0, 0.4.2.post4, 0.4.3.post2, 0.4.4, 0.4.5): by TP size alone, 0.88 at TP 1,
#   0.87 at TP 2-3, 0.85 at TP 4-7, 0.81 at TP 8-15, 0.79 at TP 16 and more;
# - "tp-0.3" before 0.4.0 (read at 0.3.4.post2): the same with 0.83 at TP 8-15.
SGLANG_OLD_MEM_FRACTION_ERAS: tuple[tuple[tuple[int, ...], str], ...] = (
    ((0, 4, 8), "card"), ((0, 4, 6), "tp-big"), ((0, 4, 0), "tp"), ((0,), "tp-0.3"))


# SGLang 0.4.7.post1 (PyPI wheel, read 2026-11-25: python/sglang/srt/server_args.py `__post_init__` and
# model_executor/cuda_graph_runner.py `get_batch_sizes_to_capture`) already has 0.4.8's card-sized defaults, where
# 0.4.7 (wheel read the same day) still has the TP table: mem_fraction_static = round((gpu_mem - reserved) / gpu_mem,
# 3) with reserved (9.5 + tp x pp / 2) GiB below 90 GiB, --chunked-prefill-size 2,048 below 35 GiB / 8,192 below
# 160 GiB, and cuda_graph_max_bs 8 / 80 below 35 GiB. The eras here compare release numbers only, so a 0.4.7 post
# release is read as 0.4.8 (SGLANG_CARD_DEFAULTS_FROM_POST).
SGLANG_CARD_DEFAULTS_FROM_POST = ((0, 4, 7), 1)


def sglang_era_version(version: str | None) -> str | None:
    """The release whose memory defaults SGLang `version` runs: "0.4.8" for 0.4.7.post1 and later 0.4.7 post releases
    (SGLANG_CARD_DEFAULTS_FROM_POST), otherwise `version` unchanged (0.4.7 itself keeps its TP table)."""
    v = parse_version(version)
    release, first_post = SGLANG_CARD_DEFAULTS_FROM_POST
    post = re.search(r"\.?post(\d+)", (version or "").lower())
    if v is not None and v.release == release and post is not None and int(post.group(1)) >= first_post:
        return "0.4.8"
    return version


def _sglang_tp_mem_fraction(tp: int, tp8: float) -> float:
    """SGLang's mem_fraction_static by TP size before 0.4.8 (SGLANG_OLD_MEM_FRACTION_ERAS); `tp8`: at TP 8-15."""
    for at_least, frac in ((16, 0.79), (8, tp8), (4, 0.85), (2, 0.87)):
        if tp >= at_least:
            return frac
    return SGLANG_OLD_MEM_FRACTION


def sglang_old_mem_fraction_static(gpu_mib: float, tp: int, pp: int, version: str | None) -> float:
    """SGLang's default --mem-fraction-static before 0.5.3 on a card of `gpu_mib` MiB (SGLANG_OLD_MEM_FRACTION_ERAS):
    0.88 on any card at TP 1 under 0.4.5; 0.81 at TP 8 under 0.4.2; an H200 (143,770 MiB) at TP 1 0.907 under 0.4.6
    and round((143,770 - 12.5 x 1024) / 143,770, 3) = 0.911 under 0.5.2; an 80 GB H100 (81,562 MiB) at TP 1 under
    0.5.2 round((81,562 - 10 x 1024) / 81,562, 3) = 0.874; an A100 40GB (40,960 MiB) at TP 1 0.88 under 0.4.7 and
    round((40,960 - 10 x 1024) / 40,960, 3) = 0.75 from 0.4.7.post1."""
    version = sglang_era_version(version)
    rule = next(r for first, r in SGLANG_OLD_MEM_FRACTION_ERAS if not series_before(version, first))
    if rule == "card":
        parallel = tp * pp
        if gpu_mib < 35 * 1024:
            reserved_gib = 2.8 + parallel / 10
        elif gpu_mib < 90 * 1024:
            reserved_gib = 9.5 + parallel / 2
        elif gpu_mib < 160 * 1024:
            reserved_gib = 12 + parallel / 2
        else:
            reserved_gib = 32.0
        return round((gpu_mib - reserved_gib * 1024) / gpu_mib, 3)
    if rule == "tp-big" and gpu_mib > 81920:
        return (gpu_mib - 13 * 1024) / gpu_mib
    return _sglang_tp_mem_fraction(tp, 0.83 if rule == "tp-0.3" else 0.81)


# SGLang's --chunked-prefill-size default by the GPU memory the device reports (python/sglang/srt/server_args.py
# `__post_init__` / `_handle_gpu_memory_settings`, `gpu_mem` in MiB; read in the PyPI wheel of each release named),
# newest rule first, as (first release, ((below this many GiB, tokens), ...), tokens above the last):
# - from 0.5.20 (SGLANG_GPU_BUCKET_ERAS): 2,048 below 20 GiB, 4,096 below 60 GiB (now also A10, L4, RTX 4090 /
#   5090), 8,192 below 160 GiB, 16,384 above;
# - 0.5.3 to 0.5.19 (PR #10372, merged 2025-09-19; tiers as PR #10975 keeps them; read at 0.5.3): 2,048 below 35 GiB
#   (A10, RTX 4090 / 5090), 4,096 below 60 GiB (A100 40GB, L40), 8,192 below 160 GiB (H100, H200), 16,384 above
#   (B200, MI300X);
# - 0.4.7.post1 to 0.5.2 (read at 0.4.7.post1, 0.4.8, 0.4.9, 0.4.10, 0.5.1, 0.5.2): 2,048 below 35 GiB, 8,192
#   below 160 GiB, 16,384 above;
# - 0.4.7: 2,048 below 25,000 MiB, 16,384 above 180,000 MiB, else 8,192;
# - 0.4.0 to 0.4.6 (PR #2268, 2024-11-29; read at 0.4.0, 0.4.2.post4, 0.4.3.post2, 0.4.5, 0.4.6): 2,048 below
#   25,000 MiB, else 8,192;
# - before 0.4.0 (read at 0.3.0): 8,192 on every card.
SGLANG_PREFILL_ERAS: tuple[tuple[tuple[int, ...], tuple[tuple[float, int], ...], int], ...] = (
    ((0, 5, 20), ((20.0, 2048), (60.0, 4096), (160.0, 8192)), 16384),
    ((0, 5, 3), ((35.0, 2048), (60.0, 4096), (160.0, 8192)), 16384),
    ((0, 4, 8), ((35.0, 2048), (160.0, 8192)), 16384),
    ((0, 4, 7), ((25_000 / 1024, 2048), (180_000 / 1024, 8192)), 16384),
    ((0, 4, 0), ((25_000 / 1024, 2048),), 8192),
    ((0,), (), 8192),
)


def sglang_default_chunked_prefill(memory_gib: float, version: str | None) -> int:
    """SGLang's default chunked-prefill budget (tokens per prefill batch) on a GPU of `memory_gib` GiB
    under SGLang `version` (see SGLANG_PREFILL_ERAS). A version given as a series ("0.5", the release
    named when none is given) takes that series' newest rule (`engines.series_before`). A 24 GB card (A10G, L4,
    RTX 4090: 22-24 GiB as reported) gets 2,048 under every rule before 0.5.20 and 4,096 from it (so under "0.5", the
    current release); an A100 40GB got 8,192 before 0.5.3 and 4,096 after; a 192 GB MI300X 8,192 before 0.4.7 and
    16,384 from it. 0.4.7.post1 takes 0.4.8's rule (`sglang_era_version`)."""
    version = sglang_era_version(version)
    for first, tiers, above in SGLANG_PREFILL_ERAS:
        if not series_before(version, first):
            return next((tokens for below_gib, tokens in tiers if memory_gib < below_gib), above)
    raise AssertionError("the last era starts at release 0")


def sglang_gpu_buckets(version: str | None) -> tuple[tuple[float, int, int, int], ...]:
    """SGLang `version`'s card table from 0.5.3 (SGLANG_GPU_BUCKET_ERAS); a series ("0.5") takes its newest."""
    return next(buckets for first, buckets in SGLANG_GPU_BUCKET_ERAS if not series_before(version, first))


def sglang_gpu_defaults(gpu: GPU, tp: int, version: str | None = None) -> tuple[int, int]:
    """SGLang's (--chunked-prefill-size, --cuda-graph-max-bs) defaults on this card from 0.5.3 under `version`
    (SGLANG_GPU_BUCKET_ERAS; None: the current release): an L4 at TP 1 (2,048, 24) under 0.5.5, (4,096, 48) now."""
    for below_gib, chunk, bs_small, bs_large in sglang_gpu_buckets(version):
        if gpu.memory_gib < below_gib:
            return chunk, bs_small if tp < 4 else bs_large
    raise AssertionError("the last bucket is unbounded")


def sglang_prefill_graph_sizes(chunk_tokens: int) -> int:
    """How many prefill token counts SGLang captures as (piecewise) CUDA graphs up to `chunk_tokens`
    (server_args.py `_generate_piecewise_cuda_graph_tokens`, 0.5.10; SGLANG_PREFILL_GRAPHS): 58 at 8,192."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, chunk_tokens + 1, 512)]
    return sum(1 for s in sizes if s <= chunk_tokens)


def sglang_prefill_graph_reserve_mib(gpu: GPU, chunk_tokens: int, version: str | None, mla: bool) -> float:
    """What SGLang `version`'s mem_fraction_static heuristic sets aside for its prefill CUDA graphs, in MiB
    (SGLANG_PREFILL_GRAPHS): none before 0.5.10 or off NVIDIA (SGLang turns them off on HIP and other devices);
    1,536 with an MLA model; else 8 MiB per captured size, 464 MiB at an 8,192-token chunk."""
    if series_before(version, SGLANG_PREFILL_GRAPHS) or gpu.vendor != "NVIDIA":
        return 0.0
    if mla:
        return float(SGLANG_PREFILL_GRAPH_MLA_MIB)
    return float(SGLANG_PREFILL_GRAPH_MIB_PER_SIZE * sglang_prefill_graph_sizes(chunk_tokens))


def sglang_mem_fraction_static(gpu: GPU, tp: int, pp: int, version: str | None, *,
                               chunk_tokens: int | None = None, mla: bool = False) -> float:
    """SGLang's default --mem-fraction-static (the share of the card holding weights and the KV pool).
    From 0.5.3 (and for the current release) it is worked out from the card as server_args.py does (see
    SGLANG_MEMORY_HEURISTIC): reserved = 512 MiB + 1.5 MiB per chunked-prefill token (`chunk_tokens`, the plan's
    --chunked-prefill-size, else the card's default; at least 2,048) + 2 MiB per CUDA-graph slot + tp x pp / 8 GiB
    + the prefill CUDA graphs' reserve from 0.5.10 (`sglang_prefill_graph_reserve_mib`; `mla`: the model uses MLA),
    at least 10 GiB on cards over 60 GiB. An 80 GB H100 (81,562 MiB) at TP 1: 0.835 under 0.5.3-0.5.9
    ((81,562 - 13,440) / 81,562), 0.830 from 0.5.10 (13,904 MiB with 58 prefill graphs); an SGLang issue reports
    0.828 for Qwen3-32B on an H100 under a mid-2026 release (sgl-project/sglang issue #29092, 2026-06-23). 0.818 at TP
    8 and 0.897 on a 141 GB H200 at TP 8 under 0.5.3. Before 0.5.3: each release's own rule
    (`sglang_old_mem_fraction_static`)."""
    gpu_mib = gpu.memory_gib * 1024
    if series_before(version, SGLANG_MEMORY_HEURISTIC):
        return sglang_old_mem_fraction_static(gpu_mib, tp, pp, version)
    chunk, graph_bs = sglang_gpu_defaults(gpu, tp, version)
    chunk = chunk_tokens or chunk
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    reserved += sglang_prefill_graph_reserve_mib(gpu, chunk, version, mla)
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


# SGLang's custom all-reduce on AMD Instinct over Infinity Fabric: from 0.4.3. SGLang PR #3406 (2025-02-08, "Enable
# custom AR for AMD GPUs and maintain it in sgl-kernel": "The current SGLang on AMD GPUs fails to leverage vLLM custom
# AR", its log then: "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs"); the
# first release after it is taken, inferred from the dates, not read from release notes. Its custom_all_reduce.py
# then runs the kernel (sgl-kernel's HIP port of vLLM's) wherever the GPUs form a full xGMI mesh (`should_custom_ar`:
# `if _is_hip: if self.full_nvlink: return inp_size < self.max_size`, max_size 16 MiB on ROCm).
SGLANG_ROCM_CUSTOM_ALLREDUCE = (0, 4, 3)


def sglang_custom_allreduce_on_amd(text: str | None) -> bool:
    """Whether this SGLang release runs its own peer-to-peer all-reduce on AMD Infinity Fabric (else RCCL's ring):
    releases from 0.4.3 (SGLANG_ROCM_CUSTOM_ALLREDUCE) and the current one when no version is given. The calibration's
    SGLang 0.4.2.post4 runs on 8 x MI300X (DSTACKR1-*) are on RCCL."""
    return not series_before(text, SGLANG_ROCM_CUSTOM_ALLREDUCE)


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


# TensorRT-LLM's AUTO all-reduce (from 0.12) runs its one-shot kernel for small messages and leaves larger ones to
# the two-shot kernel or NCCL: AllreducePlugin::selectImplementation (cpp/tensorrt_llm/plugins/ncclPlugin/
# allreducePlugin.cpp, the 0.12-0.2x trees; the PyTorch backend's AllreduceOp in cpp/tensorrt_llm/thop/allreduceOp.cpp
# keeps the same size rule and names the one-shot path MIN_LATENCY) takes the one-shot kernel when the message fits
# the IPC workspace (customAllReduceUtils::getMaxRequiredWorkspaceSize: 16,000,000 bytes at 2 ranks, 8,000,000 above)
# and, above 2 ranks, is below 1,000,000 bytes (3-4 ranks) or 500,000 bytes (more), in the activations' dtype.
TRTLLM_ONESHOT_MAX_BYTES: tuple[tuple[int, float], ...] = ((2, 16e6), (4, 1e6))
TRTLLM_ONESHOT_MAX_BYTES_ABOVE = 500e3


def trtllm_one_shot_allreduce(message_bytes: Num, ranks: int) -> Num:
    """Whether TensorRT-LLM's AUTO strategy (`trtllm_custom_allreduce` releases, NVLink) sends an all-reduce of
    `message_bytes` through its one-shot kernel (TRTLLM_ONESHOT_MAX_BYTES): every rank copies its slice into its
    IPC buffer, the ranks' matching blocks meet at one flag barrier, and each rank pulls and sums its peers' slices
    (oneShotAllReduceKernel, cpp/tensorrt_llm/kernels/customAllReduceKernels.cu: "1. B0 copies the chunk ...
    2. B0 on GPU 0 and B0 on GPU 1 wait for each other (block_barrier) 3. B0 on GPU 0 pull and sum the chunk from
    GPU 1"). A decode step's all-reduces are of this kind: Llama-3.1-8B at TP 2 stays one-shot up to ~1,950 tokens
    in the pass (8,192 bytes each), a 5,120-wide model at TP 4 below ~97."""
    limit = TRTLLM_ONESHOT_MAX_BYTES_ABOVE
    for top, cap in TRTLLM_ONESHOT_MAX_BYTES:
        if ranks <= top:
            limit = cap
            break
    if ranks <= 2:
        return message_bytes <= limit
    return message_bytes < limit


def vllm_multi_step(text: str | None) -> bool:
    """Whether a vLLM release has multi-step scheduling (`--num-scheduler-steps`): added in 0.6.0 (PR #7000,
    vLLM blog 2024-09-05 "vLLM v0.6.0: 2.7x Throughput Improvement and 5x Latency Reduction"), removed with
    V0 in August 2025 (PR #22138, #22779: 0.10.1); not in the current release (no version given)."""
    return not before(text, (0, 6)) and before(text, (0, 10, 1))


def vllm_v0_label(text: str | None) -> bool:
    """Whether a vLLM version names the V0 engine in its local label ("0.9.1+v0"): releases 0.8.0 to 0.10.0
    default to V1 but still run V0 when the server starts with VLLM_USE_V1=0 (vllm/envs.py `VLLM_USE_V1`; V0's
    engine was removed in August 2025, vllm-project/vllm PR #22138 / #22779, as in `vllm_multi_step`). The
    Livinfly/MLsys-Learning-Record-2 runs on an A100 PCIe (benchmark/README.md @ f7b9c79: "vLLM: 0.9.1" with V1 disabled
    by export VLLM_USE_V1=0) are such runs."""
    label = (text or "").partition("+")[2].lower()
    return "v0" in re.split(r"[+._-]", label)


def vllm_v1(text: str | None) -> bool:
    """vLLM's V1 engine (default from 0.8.0); current when no version is given. A release from 0.8 whose local
    label names V0 ("0.9.1+v0", `vllm_v0_label`) runs V0."""
    return not before(text, (0, 8)) and not vllm_v0_label(text)


# vLLM's async scheduling (schedule step N+1 while step N runs on the GPU) is on by default from 0.14.0, off before
# unless `--async-scheduling` is given. Read in the release wheels: vllm 0.13.0 `vllm/config/scheduler.py` has
# `async_scheduling: bool = False`, and `vllm/config/vllm.py`'s branch that turns it on for an unset flag carries
# "NOTE: we won't reach here until async scheduling is enabled by default"; vllm 0.14.0 has
# `async_scheduling: bool = Field(default=None)`, which `VllmConfig.__post_init__` turns on unless pipeline
# parallelism, an incompatible speculative method or an executor without support (not mp / uni /
# external_launcher) rules it out (vllm-project/vllm PR #27614). 0.12 was assumed before (the Q4 2025 roadmap).
VLLM_ASYNC_SCHEDULING_FROM = (0, 14)


def vllm_async_scheduling_default(text: str | None) -> bool:
    """Whether a vLLM release schedules asynchronously by default (VLLM_ASYNC_SCHEDULING_FROM); current when no
    version is given."""
    return not before(text, VLLM_ASYNC_SCHEDULING_FROM)


# vLLM V0's chunked prefill for long-context models, by release (vllm/engine/arg_utils.py
# `EngineArgs.create_engine_config`, from 0.8.0 `_set_default_args_v0`; vllm/config.py `SchedulerConfig`; read in the
# PyPI sdists of 0.5.2 ... 0.9.0): with `enable_chunked_prefill` not given and max_model_len > 32,768, V0 turns chunked
# prefill on "to avoid OOM errors in the initial memory profiling phase" (PR #6666, merged 2024-07-23, first in 0.5.3,
# for Llama 3.1's 128K context). The block does not look at the usage context: the OpenAI server and the offline
# `LLM` class alike get it; only vLLM's own benchmark_throughput.py / benchmark_latency.py up to 0.6.3 passed an
# explicit False (their own store_true flag; from 0.6.4 they take EngineArgs' CLI, PR #9529, and get the default too;
# 0.6.4.dev builds of late October 2024 still ran the old script: LHLMI300X's notebook logs
# `enable_chunked_prefill=False` and `chunked_prefill_enabled=False` at max_seq_len 131,072 with 0.6.4.dev5, so a
# benchmark row states its flag).
# It is not turned on for:
# sliding-window models, speculative decoding, LoRA and prompt adapters (all releases); prefix caching (0.5.3 - 0.6.0;
# PR #8342 kept it on from 0.6.1); Mamba-style layers (0.5.4 - 0.6.2); multimodal models (from 0.6.2, PR #8425); AMD
# ROCm from 0.6.5 (PR #11146, 2024-12-12, `not current_platform.is_rocm()`, "poor performance due to a suboptimal
# triton kernel"; AMD's fork ROCm/vllm PR #324 the same day; from 0.8.0 `current_platform.is_cuda()`); DeepSeek MLA
# models (0.7.1 - 0.7.3 VllmConfig forces chunked prefill off for MLA; after PR #12639 gave MLA chunked prefill,
# 0.8's `_set_default_args_v0` still leaves MLA out of the default). With chunked prefill on and no
# --max-num-batched-tokens the budget is 512 tokens per step ("the best balance between ITL and TTFT on A100") up to
# 0.6.4, 2,048 from 0.6.5; with multi-step scheduling (--num-scheduler-steps > 1) 0.6.0 - 0.6.2 refuse chunked prefill
# (ValueError) and from 0.6.3 the budget is max(max_model_len, 2048), prompts not chunked.
VLLM_V0_LONG_CONTEXT_CHUNKING_FROM = (0, 5, 3)
VLLM_V0_LONG_CONTEXT_TOKENS = 32_768
VLLM_V0_CHUNK_BUDGET_2048_FROM = (0, 6, 5)
VLLM_V0_NO_ROCM_DEFAULT_FROM = (0, 6, 5)
VLLM_V0_MLA_NO_CHUNKING_FROM = (0, 7, 1)
VLLM_V0_PREFIX_CACHING_EXCLUDED_BEFORE = (0, 6, 1)
VLLM_V0_MULTI_STEP_CHUNKING_FROM = (0, 6, 3)


def vllm_v0_chunked_budget(text: str | None, max_model_len: int, num_scheduler_steps: int | None = None) -> int | None:
    """V0's default max_num_batched_tokens with chunked prefill on (see above): 512 before 0.6.5, else 2,048; with
    multi-step scheduling max(max_model_len, 2048) from 0.6.3 and None (no chunked prefill) before."""
    if (num_scheduler_steps or 1) > 1:
        return None if before(text, VLLM_V0_MULTI_STEP_CHUNKING_FROM) else max(max_model_len, 2048)
    return 512 if before(text, VLLM_V0_CHUNK_BUDGET_2048_FROM) else 2048


def vllm_v0_chunks_by_default(text: str | None, max_model_len: int, *, rocm: bool, mla: bool,
                              sliding_window: bool, prefix_caching: bool) -> bool:
    """Whether vLLM V0 release `text` turns chunked prefill on by itself (see above): from 0.5.3, for a max_model_len
    above 32,768, less the cases it leaves out."""
    if before(text, VLLM_V0_LONG_CONTEXT_CHUNKING_FROM) or max_model_len <= VLLM_V0_LONG_CONTEXT_TOKENS:
        return False
    if sliding_window:
        return False
    if rocm and not before(text, VLLM_V0_NO_ROCM_DEFAULT_FROM):
        return False
    if mla and not before(text, VLLM_V0_MLA_NO_CHUNKING_FROM):
        return False
    return not (prefix_caching and before(text, VLLM_V0_PREFIX_CACHING_EXCLUDED_BEFORE))


def vllm_v0_default_budget(plan: Plan, gpu: GPU, model_max_len: int | None, arch: ModelArch | None) -> int | None:
    """vLLM V0's chunked-prefill budget when the plan gives no max_num_batched_tokens
    (`vllm_v0_chunks_by_default`, `vllm_v0_chunked_budget`; vLLM's arg_utils.py / config.py by release): with
    `enable_chunked_prefill = true` the release's default budget; unset, the same where V0 turns chunked prefill on
    by itself: a max_model_len (the plan's, else the model's max_position_embeddings, vLLM's default) above 32,768
    from 0.5.3, on NVIDIA (and AMD before 0.6.5), not for sliding-window or (from 0.7.1) MLA models. The dstack
    H100 server of DSTACKCMP (0.6.3.post2 nightly, `vllm serve ... --max-model-len 91680`, no chunking flag)
    records "chunked prefill on, max-num-batched-tokens 512" in its CSV. None: prompts are prefilled whole."""
    w = plan.workload
    max_len = w.max_model_len or model_max_len or max(w.context, 2048)
    if w.enable_chunked_prefill is None:
        sliding = arch is not None and bool(arch.sliding_window) and arch.num_sliding_layers > 0
        on = vllm_v0_chunks_by_default(
            w.engine_version, max_len, rocm=gpu.vendor.lower() == "amd", mla=arch is not None and arch.is_mla,
            sliding_window=sliding, prefix_caching=w.cached_prompt_tokens > 0)
        if not on:
            return None
    return vllm_v0_chunked_budget(w.engine_version, max_len, w.num_scheduler_steps)


# Chunked-prefill token budget per iteration by default: vLLM V1 8192 where it takes its large defaults (>= 70 GiB,
# not an A100: `vllm_big_gpu_defaults`), 2048 otherwise; V0 chunks by default only for a max_model_len above 32K (from
# 0.5.3, `vllm_v0_default_budget`).
VLLM_V1_BUDGET = {True: 8192, False: 2048}


def vllm_prefill_budget(plan: Plan, gpu: GPU, v1: bool, model_max_len: int | None = None,
                        arch: ModelArch | None = None) -> int | None:
    """vLLM's tokens per iteration under chunked prefill: None where V0 prefills whole prompts
    (`enable_chunked_prefill = false`, or its default off), the plan's max_num_batched_tokens, else V1's default
    (VLLM_V1_BUDGET) or V0's long-context one (`vllm_v0_default_budget`). `v1`: the plan runs the V1 engine
    (`vllm_v1`). The rule `serving.prefill_budget` applies to vLLM, here so that performance.py reads it too."""
    w = plan.workload
    if not v1 and w.enable_chunked_prefill is False:
        return None
    if w.max_num_batched_tokens is not None:
        return w.max_num_batched_tokens
    if v1:
        return VLLM_V1_BUDGET[vllm_big_gpu_defaults(gpu)]
    return vllm_v0_default_budget(plan, gpu, model_max_len, arch)


# Hugging Face TGI's router (huggingface/text-generation-inference, backends/v3/src/backend.rs `batching_task`,
# queue.rs `State::next_batch`; launcher/src/main.rs for the defaults), by release:
# - up to 2.4 (and the main-branch builds of 2024, e.g. sha-11d7af7 of 2024-10-04 that the dstack MI300X runs
#   used) new requests are prefilled as a batch of their own while the running batch waits ("delaying the
#   running queries by a `prefill` run", the launcher's help), then concatenated with it. While a batch runs, a
#   new one is taken only if at least floor(running x `waiting_served_ratio`) requests wait, or once
#   `max_waiting_tokens` (20) decode steps have passed since the last admission; a new batch holds waiting
#   requests FCFS up to `max_batch_prefill_tokens` prompt tokens (default `max_input_tokens` + 50) and while the
#   KV blocks of prompt + max_new_tokens fit (`max_batch_total_tokens`, from the free memory at warm-up);
# - `waiting_served_ratio` defaulted to 1.2 until PR #1820 (2024-04-28, first in v2.0.2), 0.3 since;
# - from v3.0.0 (2024-12-09) models that support it run chunked prefill: the new batch's prompt is prefilled
#   together with the running batch's decode step (`prefill(client, new_batch, cached_batch)`), up to
#   `max_batch_prefill_tokens` less the running tokens, and the ratio and wait are ignored (the router warns);
#   the budget defaults to a compute-optimal figure or 4,096.
TGI_CHUNKED_FROM = (3, 0)
TGI_CHUNKED_FROM_MONTH = (2024, 12)
TGI_RATIO_03_FROM = (2, 0, 2)
TGI_RATIO_03_FROM_MONTH = (2024, 5)
TGI_MAX_WAITING_TOKENS = 20
TGI_CHUNKED_PREFILL_TOKENS = 4096
TGI_MAX_INPUT_DEFAULT = 4096  # the launcher's cap on max_position_embeddings when no length is given


def _tgi_at_least(text: str | None, release: tuple[int, ...], month: tuple[int, int]) -> bool:
    v = parse_version(text)
    if v is None:
        return True
    if v.month is not None:
        return v.month >= month
    return v.release is None or v.release >= release


def tgi_chunked_prefill(text: str | None) -> bool:
    """Whether TGI `text` (a release or a build month, '2024-10') prefills in chunks inside the decode steps
    (from 3.0; the current release when none is given)."""
    return _tgi_at_least(text, TGI_CHUNKED_FROM, TGI_CHUNKED_FROM_MONTH)


def tgi_waiting_served_ratio(text: str | None) -> float:
    """TGI's default `--waiting-served-ratio` under release `text` (see above)."""
    return 0.3 if _tgi_at_least(text, TGI_RATIO_03_FROM, TGI_RATIO_03_FROM_MONTH) else 1.2


def tgi_max_batch_prefill_tokens(max_num_batched_tokens: int | None, max_model_len: int | None,
                                 model_max_len: int | None, prompt_tokens: int) -> int:
    """TGI's (before 3.0) default `--max-batch-prefill-tokens`: `max_input_tokens` + 50 (launcher), where
    `max_input_tokens` is taken as the plan's max_model_len (`--max-total-tokens`) less one, else the launcher's
    min(max_position_embeddings, 4,096) less one, and at least the prompt (a longer one is refused, so a run
    that served it had set it). A plan's max_num_batched_tokens is taken as `--max-batch-prefill-tokens`."""
    if max_num_batched_tokens is not None:
        return max_num_batched_tokens
    total = max_model_len or min(model_max_len or TGI_MAX_INPUT_DEFAULT, TGI_MAX_INPUT_DEFAULT)
    return max(total - 1, prompt_tokens) + 50


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


# TurboMind's decode attention, by release: how many query heads of a GQA group one thread block (CTA) serves
#    together, each load of their KV head shared among them; the cache is read once per such block, so
#    group / heads_per_cta times per step (an upper bound: re-reads that hit L2 are not credited, as for
#    efficiency.KV_READ_PER_QUERY_HEAD).
# - before v0.1.0a0 (2023-11-23): FasterTransformer's masked multi-head attention (LlamaDecoderSelfAttentionLayer.cc
#   `fusedQKV_masked_attention_dispatch`), one query head per block: the group size.
# - v0.1.0a0 - v0.2.6: src/turbomind/kernels/decoder_multihead_attention/decoder_multihead_attention.cu
#   `DispatchDecoderMultiheadAttention`: `HeadPerCta` 4 where the group divides by 4, else 2, else 1 (the branch for
#   8 is commented out); an int8 cache (`kCacheKVInt8`) takes 1. Llama-2-70B (group 8) reads its cache twice.
# - v0.3.0 - v0.4.0 (PR #1116 "Refactor turbomind attention", 2024-03-06): kernels/attention/decoding.cu
#   `dispatchDecoding`: Qh 8, 6, 5 or 4 where the group divides by it, else 1 (v0.3 sm80 int8 cache: 2 or 1;
#   v0.4.0 the same 8 / 6 / 4 / 1 for every cache type; the sm70 / sm75 paths of v0.3 differ and are not kept).
# - from v0.4.1 (PR #1491 "variable CTA_H", 2024-04-28): one Qh per group size up to 8 (`query_group_sz == n`):
#   the cache is read once (groups above 8 go to a 9-head tile, not examined here: taken as once).
# - re-read at InternLM/lmdeploy 1263d5c (2026-08, branch s36-lmdgddr): decoding.cu looks the kernel up by
#   `desc.query_group_sz` in a registry whose sm80 decoding kernels pad the group to a tile of 8 or 16 query heads
#   (kernel/decoding_sm80_128.cu: "Qh_=3..8 -> Qh=8, Qh_=9 -> Qh=16"; SIMT tiles for 1-2): still one read.
LMDEPLOY_CTA_HEADS_FROM = (0, 1, 0)
LMDEPLOY_ATTENTION_REFACTOR_FROM = (0, 3, 0)
LMDEPLOY_CTA_HEADS_V040 = (0, 4, 0)
LMDEPLOY_VARIABLE_CTA_H_FROM = (0, 4, 1)


def turbomind_kv_reads_per_step(group: int, text: str | None, kv_8bit: bool) -> float:
    """Times TurboMind's decode attention under LMDeploy `text` reads each cached KV byte per step, for a model
    whose query heads share a KV head `group` at a time, `kv_8bit` for an int8 cache (see above). A series
    ("0.2") takes its newest release; no version: the current release (once)."""
    if group <= 1 or not series_before(text, LMDEPLOY_VARIABLE_CTA_H_FROM):
        return 1.0
    heads: tuple[int, ...]
    if series_before(text, LMDEPLOY_CTA_HEADS_FROM):
        heads = (1,)
    elif series_before(text, LMDEPLOY_ATTENTION_REFACTOR_FROM):
        heads = (1,) if kv_8bit else (4, 2, 1)
    elif series_before(text, LMDEPLOY_CTA_HEADS_V040):
        heads = (2, 1) if kv_8bit else (8, 6, 5, 4, 1)
    else:
        heads = (8, 6, 4, 1)
    per_cta = next(h for h in heads if group % h == 0)
    return group / per_cta


# LMDeploy's default TurboMind max_batch_size when none is given: 128 (TurbomindEngineConfig, v0.2-v0.5); from
# v0.6.0 (PR #2434, 2024-09-09) chosen by the device name (lmdeploy/utils.py `get_max_batch_size`): A100 / A800 256,
# H100 / H800 512, else 128; from v0.10.0 (PR #3921, 2025-09-04) A100 / A800 384, H100 / H800 / H200 / L20Y 1,024.
LMDEPLOY_BATCH_BY_DEVICE_FROM = (0, 6, 0)
LMDEPLOY_BATCH_BY_DEVICE_V10_FROM = (0, 10, 0)
LMDEPLOY_BATCH_BY_DEVICE = {"a100": 256, "a800": 256, "h100": 512, "h800": 512}
LMDEPLOY_BATCH_BY_DEVICE_V10 = {"a100": 384, "a800": 384, "h100": 1024, "h800": 1024, "l20y": 1024, "h200": 1024}


def lmdeploy_default_max_batch_size(gpu: GPU, text: str | None) -> int:
    """LMDeploy's default TurboMind max_batch_size on `gpu` under release `text` (see above): its device-name
    table matches substrings of the lower-cased CUDA device name, taken here from the catalog's name. A series
    ("0.10", as CURRENT names it) stands for its newest release (`series_before`): "0.10" is v0.10.x's table."""
    if series_before(text, LMDEPLOY_BATCH_BY_DEVICE_FROM):
        return 128
    v10 = not series_before(text, LMDEPLOY_BATCH_BY_DEVICE_V10_FROM)
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
# --enforce-eager, SGLang --disable-cuda-graph, TGI's vLLM-derived CUDA graphs). TensorRT-LLM's TensorRT engines
# (before 1.0) and LMDeploy run C++ runtimes whose per-layer host cost (efficiency.LAYER_OVERHEAD_S) was fitted on
# rows without graphs: no change; TensorRT-LLM's PyTorch backend (1.0 on) without graphs is priced apart, as host
# time overlapped with the GPU's (performance.trtllm_eager_host_s, efficiency.TRTLLM_EAGER_HOST_LAYER_S).
GRAPH_DECODE_ENGINES = frozenset({"vllm", "sglang", "tgi"})

# SGLang replays a decode batch from a captured CUDA graph only up to the largest batch it captured
# (python/sglang/srt/model_executor/cuda_graph_runner.py `CudaGraphRunner.can_run`: `is_bs_supported = ...
# forward_batch.batch_size <= self.max_bs`, max_bs = max(capture_bs)); a larger decode batch runs eagerly
# (`ModelRunner.forward_decode`, kernel by kernel). The largest captured batch by default (read in the PyPI wheels
# of each release named; `gpu_mem` is the card's total in MiB as the device reports it):
# - 0.4.0: server_args.py `cuda_graph_max_bs` 8 below 25,000 MiB, else 160 (capture list [1, 2, 4] + 8..160);
# - 0.4.2.post4 to 0.4.5 (read at 0.4.2.post4, 0.4.3.post2, 0.4.4, 0.4.5): the same, 80 below 25,000 MiB at TP >= 4
#   (0.4.5's capture list adds 160..256 on cards over 81,920 MiB, but `cuda_graph_max_bs` 160 still caps it);
# - 0.4.6: 8 / 80 below 25,000 MiB, no cap above: the capture list [1, 2, 4, 8] + 16..160, plus 160..256 on cards
#   over 81,920 MiB (H200, MI300X; not an 80 GB H100);
# - 0.4.7: the list adds 160..256 over 96 GiB and 256..512 over 180,000 MiB;
# - 0.4.7.post1 to 0.5.2 (read at 0.4.7.post1, 0.4.8, 0.5.2): 8 / 80 below 35 GiB; the list adds 160..256 over
#   90 GiB and 256..512 over 160,000 MiB;
# - from 0.5.3 (PR #11076): `_handle_gpu_memory_settings`' buckets, SGLANG_GPU_BUCKET_ERAS (256 on an H100 / H200 at
#   TP < 4, 512 at TP >= 4, 32 on an A100 40GB at TP < 4, 512 on an MI300X / B200; 16 / 24 / 48 on a 20-35 GiB card
#   at TP < 4 under 0.5.3-0.5.4 / 0.5.5-0.5.19 / from 0.5.20).
# Releases before 0.4.0 (not read) take 0.4.0's rule. As (first release, ((below this many GiB, at TP < 4, at
# TP >= 4), ...), then ((above this many GiB, largest batch), ...) from smallest, and the batch otherwise).
SGLANG_GRAPH_ERAS: tuple[tuple[tuple[int, ...], tuple[tuple[float, int, int], ...],
                         tuple[tuple[float, int], ...], int], ...] = (
    ((0, 4, 8), ((35.0, 8, 80),), ((90.0, 256), (160_000 / 1024, 512)), 160),
    ((0, 4, 7), ((25_000 / 1024, 8, 80),), ((96.0, 256), (180_000 / 1024, 512)), 160),
    ((0, 4, 6), ((25_000 / 1024, 8, 80),), ((80.0, 256),), 160),
    ((0, 4, 1), ((25_000 / 1024, 8, 80),), (), 160),
    ((0,), ((25_000 / 1024, 8, 8),), (), 160),
)


def sglang_cuda_graph_max_bs(memory_gib: float, tp: int, version: str | None) -> int:
    """The largest decode batch SGLang `version` replays from a CUDA graph by default on a card of `memory_gib` GiB
    at tensor-parallel size `tp` (SGLANG_GRAPH_ERAS; from 0.5.3 SGLANG_GPU_BUCKET_ERAS: 24 on an L4 at TP 1 under 0.5.5,
    48 under the current release). A version given as a series
    ("0.5", the release named when none is given) takes that series' newest rule (`series_before`); 0.4.7.post1
    0.4.8's (`sglang_era_version`)."""
    version = sglang_era_version(version)
    if not series_before(version, SGLANG_MEMORY_HEURISTIC):
        for below_gib, _chunk, bs_small, bs_large in sglang_gpu_buckets(version):
            if memory_gib < below_gib:
                return bs_small if tp < 4 else bs_large
    for first, small, large, default in SGLANG_GRAPH_ERAS:
        if series_before(version, first):
            continue
        for below_gib, bs_small, bs_large in small:
            if memory_gib < below_gib:
                return bs_small if tp < 4 else bs_large
        best = default
        for above_gib, bs in large:
            if memory_gib > above_gib:
                best = bs
        return best
    raise AssertionError("the last era starts at release 0")


def decode_runs_eager(engine: str, version: str | None, cuda_graphs: bool, batch: Num, context: Num,
                      graph_max_bs: int | None = None) -> Num:
    """Whether a decode step of `batch` sequences at `context` tokens runs without CUDA / HIP graphs: the plan
    says so (`workload.cuda_graphs` false), or the engine's own capture does not cover the step (vLLM V0: a context
    above VLLM_V0_MAX_SEQ_LEN_TO_CAPTURE; V1: a batch above VLLM_V1_MAX_CAPTURE_SIZE; SGLang: a batch above
    `graph_max_bs`, its largest captured batch, `sglang_cuda_graph_max_bs`; None: not known, taken as covered).
    False for the engines outside GRAPH_DECODE_ENGINES. Element-wise for arrays of batches / contexts."""
    if engine not in GRAPH_DECODE_ENGINES:
        return False
    if not cuda_graphs:
        return True
    if engine == "sglang" and graph_max_bs is not None:
        return batch > graph_max_bs
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
#      V0's profile run takes the same path: it samples its max_num_seqs dummy prompts with
#      SamplingParams(top_p=0.99, top_k=vocab - 1) (worker/model_runner.py `profile_run`), and its Sampler casts
#      the logits to fp32 and sorts them (model_executor/layers/sampler.py `_apply_top_k_top_p`: read in the
#      0.4.1, 0.6.6.post1 and 0.7.3 wheels; FlashInfer's sampler only with VLLM_USE_FLASHINFER_SAMPLER=1).
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


# vLLM's default --gpu-memory-utilization (vllm/config/cache.py `CacheConfig.gpu_memory_utilization`, and
#    `LLM.__init__` in vllm/entrypoints/llm.py): 0.9 up to 0.19 (read in the 0.16.0 and 0.19.0 wheels on PyPI),
#    0.92 from 0.20.0 (read in 0.20.0, 0.21.0, 0.24.0 and 0.27.0: "If unspecified, will use the default value of
#    0.92"). Startup logs of 0.29 print "Desired GPU memory utilization is (0.92, 20.27 GiB)" on an L4 run with
#    the flag left out.
VLLM_GPU_MEMORY_UTILIZATION_092_FROM = (0, 20)


def vllm_default_gpu_memory_utilization(text: str | None) -> float:
    """vLLM's --gpu-memory-utilization when a plan does not give one: 0.92 from 0.20 (and for the current release
    when no version is given), 0.9 before (VLLM_GPU_MEMORY_UTILIZATION_092_FROM)."""
    return 0.9 if before(text, VLLM_GPU_MEMORY_UTILIZATION_092_FROM) else 0.92


# What vLLM multiplies gpu_memory_utilization by is the CUDA driver's total (vllm/utils/mem_utils.py
#    `MemorySnapshot.measure`: `torch.cuda.mem_get_info()`, i.e. cudaMemGetInfo's total; the 0.6.x worker's
#    "total_gpu_memory" is the same call), which is smaller than the board's memory as nvidia-smi and the GPU
#    catalog give it: the driver keeps part of the framebuffer for itself. vLLM startup logs print both
#    figures ("Free memory on device (free/total GiB) on startup", "the current vLLM instance can use
#    total_gpu_memory (X GiB)"): an H100 80GB 79.19 GiB of 79.65 (the llm-d-planner 0.19 rows m0137..m0151,
#    "75.23 GiB" reserved at 0.95), an L4 22.03 of 22.49, a 24 GB GeForce 23.53 of 23.99, an L40S 44.42 of
#    44.99, a T4 14.56 of 15.0: 0.44-0.57 GiB, 0.46 in four of the five.
CUDA_DRIVER_RESERVED_GIB = 0.46


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


# A run may name its backend in the version's local label, as a vLLM run names its sampler ("0.10.1+flashinfer"):
# trtllm-serve and trtllm-bench choose it with `--backend pytorch | tensorrt` (tensorrt_llm/commands/serve.py;
# the published runs name it: WAYNETRT's 0.20 `trtllm-serve --backend pytorch`, CHINMAY5090's 1.2.0 `trtllm-serve
# --backend tensorrt`, MKTRTLAT's 1.2.0 `trtllm-bench latency --backend tensorrt`), so "0.20.0+pytorch" is a 0.20
# run of the PyTorch backend and "1.2.0+tensorrt" a 1.2 run of a TensorRT engine.
TRTLLM_BACKEND_LABELS = {"tensorrt": True, "pytorch": False}


def trtllm_tensorrt_engine(text: str | None) -> bool:
    """Whether a TensorRT-LLM run of this release used a TensorRT engine (examples' convert_checkpoint.py +
    trtllm-build, the workflow before 1.0) rather than the PyTorch backend (the default from 1.0): the backend
    the version's local label names (TRTLLM_BACKEND_LABELS), else the release's default. Unknown versions: the
    current release (PyTorch backend)."""
    label = (text or "").strip().lower().partition("+")[2]
    for name, engine in TRTLLM_BACKEND_LABELS.items():
        if name in label:
            return engine
    return before(text, TRTLLM_PYTORCH_DEFAULT)


# The tokens a TensorRT engine's activation buffer is sized for (`max_num_tokens`, the context pass's largest
# packed batch), by release:
# - before 0.11 the build's default was max_batch_size x max_input_len: examples/llama/build.py (0.5-0.7)
#   and from 0.8 trtllm-build set `max_num_tokens = max_batch_size * max_input_len` when none was given
#   (tensorrt_llm/_common.py at v0.9.0, lines 208-215, as deepjavalibrary/djl-serving PR #1922 quotes it,
#   2024-05-16, and overrides it with 16,384 because the product is so large). Default max_input_len: 2,048 in
#   examples/llama/build.py 0.5 (max_input_len 2,048 + max_output_len 512 = max_seq_len 2,560:
#   triton-inference-server/tensorrtllm_backend issue #59, byshiue, 2023-11-07), 1,024 in trtllm-build
#   from 0.8 (its max_input_len and max_output_len defaults, 1,024 each: zhjunqin's 0.9 engine, built without
#   them, logs "mMaxAttentionWindowSize: 2048");
# - from 0.11 `max_num_tokens` defaults to 8,192 ("set to 8192 by default starting from v0.11",
#   docs/source/features/paged-attention-ifb-scheduler.md as NVIDIA/TensorRT-LLM PR #10283 quotes it; BuildConfig
#   `max_num_tokens: int = 8192`, tensorrt_llm/builder.py at 008b2b8).
TRTLLM_MAX_NUM_TOKENS_8192_FROM = (0, 11)
TRTLLM_DEFAULT_MAX_BATCH_SIZE = 2048  # BuildConfig `max_batch_size` default from 0.14 (`trtllm_default_max_batch_size`)
TRTLLM_LEGACY_MAX_BATCH_SIZE = 256  # the build scripts' and trtllm-build's default before 0.14
TRTLLM_MAX_BATCH_SIZE_2048_FROM = (0, 14)
TRTLLM_MAX_NUM_TOKENS_DEFAULT = 8192
TRTLLM_TRTLLM_BUILD_FROM = (0, 8)
TRTLLM_BUILD_PY_MAX_INPUT_LEN = 2048  # examples/<model>/build.py, 0.5-0.7
TRTLLM_BUILD_MAX_INPUT_LEN = 1024  # trtllm-build, 0.8 on


def trtllm_default_max_batch_size(text: str | None) -> int:
    """The `max_batch_size` a TensorRT-LLM engine or server gets from release `text` when none is given:
    256 before 0.14 (examples/<model>/build.py `--max_batch_size` default 256 in 0.5-0.7, trtllm-build's from
    0.8), 2,048 from 0.14: NVIDIA/TensorRT-LLM PR #2401 (the v0.14.0 release, 2024-11-01; first on main in
    PR #2253, 2024-09-24) lists "[BREAKING CHANGE] The default `max_batch_size` of the `trtllm-build` command
    is set to `2048`", and BuildConfig reads `max_batch_size: int = 2048` (tensorrt_llm/builder.py at
    008b2b8), which trtllm-serve and the LLM API take as their default too (tensorrt_llm/commands/serve.py
    at 00209af: `max_batch_size = BuildConfig.model_fields["max_batch_size"].default`). No version: the
    current release (2,048). trtllm-bench picks its own from the dataset (the plan's max_num_seqs)."""
    if before(text, TRTLLM_MAX_BATCH_SIZE_2048_FROM):
        return TRTLLM_LEGACY_MAX_BATCH_SIZE
    return TRTLLM_DEFAULT_MAX_BATCH_SIZE


def trtllm_engine_max_num_tokens(text: str | None, max_batch_size: int | None, max_seq_len: int | None,
                                 max_num_tokens: int | None) -> int:
    """`max_num_tokens` of a TensorRT engine built with release `text`'s defaults (see above): the plan's own
    (`max_num_batched_tokens`) when given; before 0.11 max_batch_size x max_input_len, max_input_len the
    build's default capped by the plan's max_seq_len (`max_model_len`); 8,192 from 0.11, and where the batch
    size an older engine was built with is not stated. Hand check: 0.9 with max_batch_size 40 -> 40 x 1,024 =
    40,960; 0.5 with 25 -> 25 x 2,048 = 51,200; 0.12 -> 8,192."""
    if max_num_tokens is not None:
        return max_num_tokens
    if before(text, TRTLLM_MAX_NUM_TOKENS_8192_FROM) and max_batch_size is not None:
        default_input = (TRTLLM_BUILD_PY_MAX_INPUT_LEN if before(text, TRTLLM_TRTLLM_BUILD_FROM)
                         else TRTLLM_BUILD_MAX_INPUT_LEN)
        max_input_len = min(default_input, max_seq_len) if max_seq_len is not None else default_input
        return max_batch_size * max_input_len
    return TRTLLM_MAX_NUM_TOKENS_DEFAULT


# TensorRT-LLM's chunked context: with it on, the in-flight batching scheduler splits a prompt that does not fit
# the iteration's `max_num_tokens` into chunks over several iterations beside the running generation requests;
# off, each prompt is one context chunk. It is off by default in every interface, read in the source
# (NVIDIA/TensorRT-LLM): the C++ batch manager `TrtGptModelOptionalParams(..., bool enableChunkedContext = false)`
# and the executor `ExecutorConfig(..., bool enableChunkedContext = false, ...)` (cpp/include/tensorrt_llm/
# executor/executor.h, in the oldest stored version and in 1.x); the Triton backend's `enable_chunked_context`
# parameter (false unless set; it also needs an engine built with use_paged_context_fmha); `trtllm-bench
# throughput --enable_chunked_context` (a flag, default False: tensorrt_llm/bench/benchmark/throughput.py); the
# LLM API's `enable_chunked_prefill: bool = Field(default=False)` (tensorrt_llm/llmapi/llm_args.py) that
# `trtllm-serve` passes on (`enable_chunked_prefill: bool = False` in tensorrt_llm/commands/serve.py, 1.x).
# The plan's `enable_chunked_prefill` is that switch for `--engine trt-llm`; its token budget is max_num_tokens
# (`trtllm_engine_max_num_tokens`: the plan's max_num_batched_tokens, else the release's default).


def trtllm_chunked_context_budget(enable: bool | None, text: str | None, max_batch_size: int | None,
                                  max_seq_len: int | None, max_num_tokens: int | None) -> int | None:
    """Tokens per iteration of TensorRT-LLM's in-flight batching (see above): max_num_tokens with chunked context
    on (`enable`), the plan's max_num_batched_tokens alone otherwise (None when not given: whole prompts, as
    before). Hand check: on, 1.2, nothing else given -> 8,192; on, 0.9 with max_batch_size 40 -> 40,960."""
    if enable:
        return trtllm_engine_max_num_tokens(text, max_batch_size, max_seq_len, max_num_tokens)
    return max_num_tokens


# LMDeploy TurboMind's KV pool (`cache_max_entry_count`, a fraction): up to v0.2.1 a share of the card's TOTAL
# memory (0.5); from v0.2.2 a share of the memory FREE once the weights are loaded, default 0.8 (LMDeploy
# docs/zh_cn/inference/turbomind_config.md as quoted in InternLM/lmdeploy issue #3804, 2025-07-31: "when the
# lmdeploy version is greater than 0.2.1, cache_max_entry_count is the share of free memory used for k/v blocks,
# default 0.8; e.g. a 13b on an A100-80G: (80 - 26) x 0.8 = 43.2G"; the v0.4.2 TurbomindEngineConfig docs quoted
# in issue #1737: "For lmdeploy versions greater than v0.2.1, it defaults to 0.8, signifying the percentage of
# FREE GPU memory"; lmdeploy/cli/utils.py `--cache-max-entry-count` default 0.8, "The percentage of free gpu
# memory occupied by the k/v cache, excluding weights", PR #1892, 2024-07-01).
LMDEPLOY_KV_OF_FREE_FROM = (0, 2, 2)
LMDEPLOY_CACHE_MAX_ENTRY_COUNT_FREE = 0.8


def lmdeploy_kv_of_free_memory(text: str | None) -> bool:
    """Whether LMDeploy `text` sizes TurboMind's KV pool as cache_max_entry_count (0.8) of the memory free after
    the weights (v0.2.2 on; see above). Unknown versions: the current release, which does."""
    return not before(text, LMDEPLOY_KV_OF_FREE_FROM)


# LMDeploy runs one of two backends: TurboMind (C++/CUDA, the default; everything above) or its PyTorch engine
# (`lmdeploy serve api_server --backend pytorch`, `PytorchEngineConfig`). A run names the PyTorch engine as a
# TensorRT-LLM run names its backend (TRTLLM_BACKEND_LABELS): the version's local label, "0.12.3+pytorch", or
# the engine name "lmdeploy-pytorch" (also "lmdeploy-pt"); "+turbomind" or no label is TurboMind.
LMDEPLOY_PYTORCH_LABELS = ("pytorch", "torch")
LMDEPLOY_PYTORCH_ENGINE_NAMES = ("lmdeploy-pytorch", "lmdeploy-pt", "lmdeploy-torch")
# The PyTorch engine's scheduler, InternLM/lmdeploy at v0.12.3 (the same at v0.16.0 but where noted):
# - prefill and decode run as passes of their own: lmdeploy/pytorch/engine/inputs_maker.py `do_prefill_default`
#   (v0.12.3 lines 703-727) chooses a prefill pass whenever requests wait and either their tokens reach
#   `max_prefill_token_num` or running + ready sequences are fewer than half of `max_batches`; otherwise a
#   decode pass. (v0.16.0 uses `prefill_interval`, default 16, to force a prefill after 16 consecutive decode
#   rounds, inputs_maker.py line 1253; the default config's docstring: "prefill_interval: Interval to perform
#   prefill, Default 16". Before v0.12 the same setting made decode blocks no prompt can join:
#   `lmdeploy_pytorch_decode_block`.) Under loads below half the batch cap this is vLLM V0's prefill-first
#   schedule (above half, v0.12-v0.15 wait for max_prefill_token_num waiting tokens: not priced);
# - a prefill pass takes waiting prompts up to `max_prefill_token_num` tokens, default 8,192 (messages.py
#   PytorchEngineConfig `max_prefill_token_num: int = 8192`; lmdeploy/pytorch/paging/scheduler.py line 206 at
#   v0.12.3: `token_count + seq.num_token_ids > self.cache_config.max_prefill_token_num` stops it once one runs);
# - max_batch_size, when none is given, from the same device table as TurboMind (lmdeploy/utils.py
#   `get_max_batch_size`), so `lmdeploy_default_max_batch_size` holds for both; cache_max_entry_count 0.8 of free
#   memory (PytorchEngineConfig default) as `lmdeploy_kv_of_free_memory`;
# - decode replays captured CUDA graphs (`eager_mode: bool = False`; `cudagraph_capture_batch_sizes`, "max_batch_size
#   is always captured"); prefill runs eagerly with Triton / FlashAttention kernels.
LMDEPLOY_PYTORCH_MAX_PREFILL_TOKEN_NUM = 8192
# That default by release (PytorchEngineConfig in lmdeploy/messages.py at each tag; the `lmdeploy serve` CLI's
# `--max-prefill-token-num`, ArgumentHelper default 8192, is passed to the PyTorch engine from v0.6.0 on,
# lmdeploy/cli/serve.py; before v0.6.0 the CLI has no such flag and the engine's own default applies):
# 16,384 up to v0.2.3, 8,192 in v0.2.4-v0.2.5, 4,096 from v0.2.6 to v0.5.x, then the CLI's 8,192 (the
# engine's own default stays 4,096 to v0.12.x, for pipelines, and is 8,192 from v0.13.0).
LMDEPLOY_PYTORCH_PREFILL_TOKEN_ERAS = (((0, 2, 4), 16384), ((0, 2, 6), 8192), ((0, 6, 0), 4096))


def lmdeploy_pytorch_max_prefill_tokens(version: str | None) -> int:
    """Default prompt tokens one LMDeploy PyTorch-engine prefill pass takes under release `version` (see
    LMDEPLOY_PYTORCH_PREFILL_TOKEN_ERAS); unknown and current releases: 8,192."""
    for first_after, tokens in LMDEPLOY_PYTORCH_PREFILL_TOKEN_ERAS:
        if series_before(version, first_after):
            return tokens
    return LMDEPLOY_PYTORCH_MAX_PREFILL_TOKEN_NUM
# Before v0.6.0 the PyTorch engine decoded eagerly, kernel by kernel: CUDA graphs came with PR #2104 "Refactor
# pytorch engine" (merged 2024-09-10, first in v0.6.0: messages.py PytorchEngineConfig `eager_mode: bool = False`;
# v0.5.x has no graph runner in lmdeploy/pytorch, only a modeling file mentions it).
LMDEPLOY_PYTORCH_GRAPHS_FROM = (0, 6, 0)


# The PyTorch engine admits prompts only between blocks of decode iterations up to v0.11 (`prefill_interval`,
# PytorchEngineConfig default 16 in every release from v0.2.0 to v0.16.0), read in InternLM/lmdeploy's tags:
# - v0.2.x: the engine loop prefills only when its counter runs out or nothing runs (lmdeploy/pytorch/engine/
#   engine.py `Engine.loop` at v0.2.3: `is_prefill = not prefill_counter or not has_running`, the counter reset
#   to prefill_interval at a prefill and decremented every iteration): 15 decode iterations between two prefills;
# - v0.3.0 to v0.7.1: one scheduled decode runs `loop_count = prefill_interval - 1` forward passes before the
#   scheduler is called again (engine.py `_async_step_background` at v0.3.0 / v0.5.3, `_async_loop_background`
#   at v0.6.0 / v0.7.1: `loop_count = 1 if is_prefill else (prefill_interval - 1)`), breaking early only when
#   every sequence of the batch has stopped: 15;
# - v0.7.2 to v0.11.x: `num_loops = 1 if prefill else prefill_interval` (engine.py v0.7.2 line 642, v0.9.2 line
#   900; from v0.10 `engine_strategy.get_num_loops`, strategies/ar/engine.py `prefill_interval if is_decoding`;
#   model_agent.py `for idx in range(loop_count)`, no break for waiting prompts): 16;
# - from v0.12.0 every iteration is scheduled on its own (engine/inputs_maker.py `do_prefill_default`, the
#   next inputs prefetched while a forward runs; `get_num_loops` is no longer called; prefill_interval only
#   sizes the blocks pre-allocated per decoding sequence): 1.
# A prompt that arrives while a block runs waits for its end, as under vLLM V0's multi-step scheduling
# (serving.scheduler_block_steps, serving.iteration_wait_s). TurboMind schedules every iteration (LlamaBatch.cc).
LMDEPLOY_PYTORCH_PREFILL_INTERVAL = 16
LMDEPLOY_PYTORCH_FULL_BLOCKS_FROM = (0, 7, 2)
LMDEPLOY_PYTORCH_STEP_SCHEDULING_FROM = (0, 12)


def lmdeploy_pytorch_decode_block(engine: str | None, version: str | None) -> int:
    """Decode iterations LMDeploy's PyTorch engine runs between two chances to admit a prompt (see above):
    15 up to v0.7.1 (v0.2.x's prefill counter, then prefill_interval - 1 forward loops), 16 from v0.7.2 to
    v0.11.x, 1 from v0.12.0 and for TurboMind. A version given as a series ("0.11") is its newest release."""
    if not lmdeploy_pytorch_engine(engine, version):
        return 1
    if not series_before(version, LMDEPLOY_PYTORCH_STEP_SCHEDULING_FROM):
        return 1
    if series_before(version, LMDEPLOY_PYTORCH_FULL_BLOCKS_FROM):
        return LMDEPLOY_PYTORCH_PREFILL_INTERVAL - 1
    return LMDEPLOY_PYTORCH_PREFILL_INTERVAL


def lmdeploy_pytorch_decode_eager(engine: str | None, version: str | None, cuda_graphs: bool) -> bool:
    """Whether an LMDeploy PyTorch-engine decode step runs without CUDA graphs: releases before v0.6.0
    (LMDEPLOY_PYTORCH_GRAPHS_FROM), or the plan turns them off (`eager_mode=True`). False for TurboMind."""
    if not lmdeploy_pytorch_engine(engine, version):
        return False
    return not cuda_graphs or before(version, LMDEPLOY_PYTORCH_GRAPHS_FROM)


def lmdeploy_pytorch_engine(engine: str | None, version: str | None) -> bool:
    """Whether an LMDeploy run used the PyTorch engine rather than TurboMind: the engine name
    (LMDEPLOY_PYTORCH_ENGINE_NAMES) or the version's local label (LMDEPLOY_PYTORCH_LABELS) says so."""
    name = (engine or "").strip().lower().replace(" ", "-").replace("_", "-")
    if not name.startswith("lmdeploy"):
        return False
    if name.startswith(LMDEPLOY_PYTORCH_ENGINE_NAMES):
        return True
    label = (version or "").strip().lower().partition("+")[2]
    return any(lab in label for lab in LMDEPLOY_PYTORCH_LABELS)


# MLC-LLM's nightly wheels (the only releases it had before v0.17.1 of 2024-09) are versioned by `git describe`
# against the tag v0.1.dev0: "0.1.devN" is the commit N commits after it (mlc-ai/mlc-llm version.py,
# `git_describe_version`; 0.1.dev1166 is 93c560b4 of 2024-04-26). Behaviour changes of its serving engine, with the
# commit count of the change (read in the mlc-ai/mlc-llm mirror, `git rev-list --count v0.1.dev0..<commit>`):
# - MLC_SORT_TOP_P_FROM_DEV 988 (5b8c529e, 2024-03-12, PR #1934 "Introducing GPU sampler for CUDA") to
#   MLC_SORT_TOP_P_BEFORE_DEV 1192 (c166a900, 2024-05-04, PR #2272 "Use pivot-based renormalization for top-p
#   sampling"): the GPU sampler argsorts every running sequence's whole probability vector each step when
#   top_p < 1 (cpp/serve/sampler/gpu_sampler.cc `BatchRenormalizeProbsByTopP` -> the model library's
#   `argsort_probs`, python/mlc_llm/compiler_pass/attach_sampler.py), performance.mlc_top_p_sort_s; before it
#   sampling ran on the CPU (and the 2023 ChatModule's did too: the MLCBLOG rows), not priced here;
# - MLC_HYBRID_PREFILL_FROM_DEV 1405 (6a48a02e, 2024-06-25, PR #2604 "Hybrid prefill"): before it an engine step
#   runs one action, the first that has work, and NewRequestPrefill comes first (cpp/serve/engine.cc `Step`:
#   `for (EngineAction action : actions_) { ... if (!processed_requests.empty()) { ... return; } }`); its prefill
#   holds the waiting prompts only (engine_actions/new_request_prefill.cc), so prompts run as passes of their own
#   between the decode steps, as vLLM V0's do (serving.separate_prefill_passes). From it the decodes ride in the
#   prefill step (split-fuse; EngineConfig.prefill_mode "hybrid", the default since #2701, 2024-07-27).
# Month labels: from 2024-03 and before 2024-05 / before 2024-07 (the months after the changes).
MLC_SORT_TOP_P_FROM_DEV = 988
MLC_SORT_TOP_P_FROM_MONTH = (2024, 3)
MLC_SORT_TOP_P_BEFORE_DEV = 1192
MLC_SORT_TOP_P_BEFORE_MONTH = (2024, 5)
MLC_HYBRID_PREFILL_FROM_DEV = 1405
MLC_HYBRID_PREFILL_FROM_MONTH = (2024, 7)


def mlc_nightly_before(text: str | None, dev: int, month: tuple[int, int]) -> bool:
    """Whether an MLC-LLM version is older than the nightly `dev` ("0.1.devN" with N < dev) or, given as a month,
    older than `month`. Releases ("0.17.1", "0.20") and unknown versions: False (the current behaviour)."""
    t = (text or "").strip().lower()
    m = re.search(r"(?<![\w.])v?0\.1\.dev(\d+)", t)
    if m:
        return int(m.group(1)) < dev
    v = parse_version(text)
    return v is not None and v.month is not None and v.month < month


def mlc_sorts_for_top_p(version: str | None) -> bool:
    """MLC-LLM's GPU sampler argsorts the whole vocabulary of every running sequence each decode step (top_p < 1)
    in the nightlies from MLC_SORT_TOP_P_FROM_DEV (its GPU sampler) to before MLC_SORT_TOP_P_BEFORE_DEV (see there)."""
    return (mlc_nightly_before(version, MLC_SORT_TOP_P_BEFORE_DEV, MLC_SORT_TOP_P_BEFORE_MONTH)
            and not mlc_nightly_before(version, MLC_SORT_TOP_P_FROM_DEV, MLC_SORT_TOP_P_FROM_MONTH))


def mlc_separate_prefill(version: str | None) -> bool:
    """MLC-LLM serve runs prompts as prefill steps of their own, prefill first, in nightlies before hybrid prefill
    (MLC_HYBRID_PREFILL_FROM_DEV, see there)."""
    return mlc_nightly_before(version, MLC_HYBRID_PREFILL_FROM_DEV, MLC_HYBRID_PREFILL_FROM_MONTH)


def tinychat_legacy(text: str | None) -> bool:
    """TinyChat before 2.0: its W4A16 GEMM accumulates in FP32 (module docstring)."""
    return before(text, (2, 0))


# ---- engine family keys ----------------------------------------------------------------------------
ENGINE_NAMES = ("vllm, sglang, trt-llm, lmdeploy, tgi, llama.cpp, ollama, lm-studio, llamafile, koboldcpp, mlx, "
                "rapid-mlx, transformers, exllamav2, mlc, gpt-fast, tinychat")
# The one list of names that run llama.cpp, compared without case, spaces, dots, hyphens or underscores
# ("llama.cpp", "llama-cpp", "LM Studio", "lm_studio" all match). llama.cpp's own names (its library, its
# llama-server / llama-cli / llama-bench programs, a GGUF file) and the front-ends that ship its kernels:
# Ollama (ollama/ollama vendors llama.cpp under llama/llama.cpp), LM Studio (its "llama.cpp" runtime,
# lmstudio.ai/docs), llamafile (Mozilla-Ocho/llamafile: llama.cpp in one executable) and KoboldCpp
# (LostRuins/koboldcpp: "built off llama.cpp"). Each is priced as llama.cpp's build; only Ollama's own defaults
# (num_ctx, its runner's host time) are modelled apart (memory.ollama_default_num_ctx).
LLAMA_CPP_PROGRAMS = ("llamacpp", "llamaserver", "llamacli", "llamabench", "gguf")
LLAMA_CPP_FRONTENDS = ("ollama", "lmstudio", "llamafile", "koboldcpp")


def _compact_name(engine: str) -> str:
    """`engine` lower-case without spaces, dots, hyphens and underscores: one spelling per name."""
    return re.sub(r"[\s._-]+", "", engine.lower())


def runs_llama_cpp(engine: str | None) -> bool:
    """Whether the engine `engine` names (as a user spells it) runs llama.cpp: llama.cpp itself, or a front-end
    in LLAMA_CPP_FRONTENDS. The planner, the memory model and the fixes all ask this, so "LM Studio" is split,
    sized and fixed as llama.cpp everywhere (not just priced as it)."""
    if not engine:
        return False
    return _compact_name(engine).startswith(LLAMA_CPP_PROGRAMS + LLAMA_CPP_FRONTENDS)


def llama_cpp_front_end(engine: str | None) -> bool:
    """Whether `engine` names a front-end that runs llama.cpp (LLAMA_CPP_FRONTENDS), not llama.cpp itself."""
    return bool(engine) and _compact_name(engine or "").startswith(LLAMA_CPP_FRONTENDS)


# MLX serving engines (engine family mlx, efficiency.MLX_SERVER_SEQ_STEP_S): vllm-mlx and its fork Rapid-MLX.
MLX_SERVER_ENGINES = ("rapid-mlx", "rapidmlx", "vllm-mlx")


# Engine name prefixes (lower case, spaces removed, "_" as "-") and the family each names (`engine_family`)
ENGINE_NAME_PREFIXES: tuple[tuple[str, str], ...] = (
    ("vllm", "vllm"), ("sglang", "sglang"), ("tensorrt", "trt-llm"), ("trt", "trt-llm"), ("lmdeploy", "lmdeploy"),
    ("turbomind", "lmdeploy"), ("tgi", "tgi"), ("text-generation-inference", "tgi"), ("transformers", "transformers"),
    ("hf", "transformers"), ("pytorch", "transformers"), ("exllama", "exllamav2"), ("tabby", "exllamav2"),
    ("mlc", "mlc"), ("gpt-fast", "gpt-fast"), ("gptfast", "gpt-fast"), ("torchao", "gpt-fast"),
    ("tinychat", "tinychat"))

# The families whose behaviour mlrig dates by release (this module), with the version forms each takes. A label
# these cannot read is refused (`engine_version_problem`) rather than priced silently as the current release.
# Engines with no releases to date (gpt-fast and torchao run from a commit) and training frameworks mlrig does not
# date take any label (it is kept in the plan, and changes nothing).
VERSION_FORMS = {
    "vllm": ("a release such as '0.6.3' or 'v0.8.0' (also '0.6.3.post1', '0.7.4.dev181', '0.6.3+flashinfer',"
             " '0.9.1+v0')"),
    "sglang": "a release such as '0.4.3' or '0.5.2' (also '0.4.3.post2')",
    "lmdeploy": "a release such as '0.6.0', or '0.6.0+pytorch' for its PyTorch engine",
    "llama.cpp": ("a build such as 'b4000', a build month such as '2024-06', or a front-end's release such as "
                  "Ollama's '0.5.7'; '+vulkan' selects the Vulkan build on AMD (e.g. 'b6000+vulkan')"),
    "trt-llm": ("a release such as '0.12' or '1.0', with '+tensorrt' or '+pytorch' for the backend "
                "(e.g. '1.0+tensorrt')"),
    "mlx": "an mlx-lm release such as '0.20.4' (or 'mlx-lm 0.20.4')",
    "transformers": "a release such as '4.44' or '4.38.2', or a month such as '2024-06'",
    "exllamav2": "a release such as '0.2.4'",
    "tgi": "a release such as '2.4.0' or '3.0', or a month such as '2024-12'",
    "tinychat": "a release such as '2.0' or '1.0'",
    "mlc": "a release such as '0.1.0' or a month such as '2024-06'",
}


def engine_family_by_name(engine: str | None) -> str | None:
    """The family an engine name belongs to from the name alone (no GPU, no refusals): what `engine_family` maps it
    to on a GPU it runs on; None for a name it does not know (a training framework, a typo)."""
    e = (engine or "").lower().replace(" ", "").replace("_", "-")
    if not e:
        return None
    if e.startswith("mlx") or e in MLX_SERVER_ENGINES:
        return "mlx"
    if runs_llama_cpp(e) or e == "llama.cpp-2024":
        return "llama.cpp"
    return next((fam for key, fam in ENGINE_NAME_PREFIXES if e.startswith(key)), None)


def engine_version_problem(engine: str | None, text: str | None) -> str | None:
    """Why `text` is no version of `engine` mlrig can read, with the forms it takes (VERSION_FORMS); None when it
    is one, or when the engine is not one mlrig dates. Without this a label `parse_version` cannot read ('garbage',
    a commit hash, 'latest') would be priced as the current release without a word. With no engine named the
    default engine depends on the GPU, so any form `parse_version` reads is taken."""
    if text is None:
        return None
    family = engine_family_by_name(engine)
    if engine and family not in VERSION_FORMS:
        return None
    if parse_version(text) is not None:
        return None
    forms = VERSION_FORMS.get(family or "", "a release such as '0.6.3', a llama.cpp build such as 'b4000' or a "
                                            "month such as '2024-06'")
    current = CURRENT.get(family or "")
    leave = (f"leave it out for the current release (~{current})" if current
             else "leave it out for the current release")
    return f"cannot read {text!r} as a version of {engine or 'the engine'}; give {forms}, or {leave}"


# What each family's release rules (this module) read: a version of another kind parses, but no rule reads it, so
# the plan is priced as the current release; `engine_version_unread_note` says so.
VERSION_KINDS_READ = {"vllm": ("release",), "sglang": ("release",), "lmdeploy": ("release",), "trt-llm": ("release",),
                      "mlx": ("release",), "tinychat": ("release",), "transformers": ("release",),
                      "tgi": ("release", "month"), "llama.cpp": ("build", "month")}


def engine_version_unread_note(engine: str | None, text: str | None) -> str | None:
    """A note for an inference plan whose version parses as a kind its engine's rules do not read (VERSION_KINDS_READ):
    a llama.cpp build number given to vLLM, a month given to SGLang, a dotted release given to llama.cpp itself (its
    front-ends' releases, Ollama's '0.5.7', are theirs and read where modelled). None otherwise."""
    v = parse_version(text)
    family = engine_family_by_name(engine)
    if v is None or family not in VERSION_KINDS_READ or (family == "llama.cpp" and llama_cpp_front_end(engine)):
        return None
    kind = "release" if v.release is not None else "build" if v.build is not None else "month"
    read = VERSION_KINDS_READ[family]
    if kind in read:
        return None
    examples = {"release": "a release ('0.6.3')", "build": "a build ('b4000')", "month": "a month ('2024-06')"}
    return (f"engine_version {text!r} is a {kind}, and {engine}'s version rules read only "
            f"{' or '.join(examples[k] for k in read)}: priced as its current release (~{CURRENT.get(family, '')})")


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
    if e.startswith("mlx") or e in MLX_SERVER_ENGINES:
        if not apple:
            raise MlrigError(f"MLX runs on Apple silicon only, not on {gpu.name}; use --engine llama.cpp or vllm")
        return "mlx"
    if runs_llama_cpp(e):
        if apple or "metal" in e:
            return "llama.cpp-metal"
        if llama_cpp_backend(gpu, version) == "hip":
            return "llama.cpp-hip"
        return "llama.cpp" if llama_cpp_has_graphs(version) else "llama.cpp-2024"
    for key, fam in ENGINE_NAME_PREFIXES:
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
