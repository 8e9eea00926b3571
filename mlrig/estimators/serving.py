"""Serving loads: continuous batching at a concurrency, an offline batch, a Poisson request rate.

A serving engine (vLLM, SGLang, TensorRT-LLM, LMDeploy, TGI) runs *iterations*: each decodes one
token for every running sequence and prefills some waiting prompts (iteration-level scheduling,
Yu et al. 2022 "Orca", OSDI '22; vLLM, Kwon et al. 2023 "PagedAttention", SOSP '23). With chunked
prefill (Agrawal et al. 2024 "Sarathi-Serve", OSDI '24; vLLM's default since V1) a prompt is split
over several iterations so that each iteration handles at most `max_num_batched_tokens` tokens.

Per iteration, with `n` running sequences, prompt P and output O tokens per request:
- the decode part is one roofline pass of `n` sequences at the mean context (`decode_step`);
- in steady state every request brings P prompt tokens per O generated tokens, so each iteration
  also prefills n x P / O tokens on average, priced at the prompt's own prefill cost per token (its
  arithmetic only where chunked prefill fuses it into the decode pass; under SGLang, whose scheduler runs
  new prompts as passes of their own with the decodes paused, the whole pass: `sglang_prefill_first`);
- output throughput = n / iteration time; requests/s = throughput / O.
`n` is min(users, the engine's batch cap `max_num_seqs`, the sequences the KV pool holds).

TTFT under load is what a request waits before its prefill runs, plus the prefill, plus the
iteration that samples its first token:
- the rest of the running iteration: half of it on average for Poisson arrivals, up to all of it for a
  closed loop's (a user's next request follows the last token, sampled at an iteration's end, by the front
  end's round trip), none when nothing else runs, one more under vLLM's async scheduling (`iteration_wait_s`);
- the prefill queue: prefill work arrives at rate lambda x P tokens and is served FCFS; with utilisation
  rho = lambda x P x t_p of the GPU's time, an M/D/1 queue waits rho / (2 (1 - rho)) prefill
  times on average (Pollaczek-Khinchine mean waiting time, deterministic service; Kleinrock 1975,
  "Queueing Systems" vol. 1 eq. 5.105); TTFT is reported as a median, and the median wait is 0
  below half load (`median_prefill_wait_s`); under chunked prefill the service is the prompt's
  arithmetic only (`fused_prefill_s_per_token`), as is its share of each steady-state iteration;
- its own prefill, split into ceil(P / (budget - n)) chunks when chunked prefill caps the tokens
  per iteration (each chunk also carries the n decodes), else one prefill pass;
- requests beyond the running cap wait for a slot: (users - n) / n request durations; Poisson arrivals
  below the cap still find the batch full at times, and wait for a completion (M/G/c, `median_slot_wait_s`);
- the serving front end (HTTP, tokenisation, the first token's trip back: `frontend_s`).
A closed loop starts with all users' requests at once (a wave): those wait for the wave's prefills
(`wave_ttft_s`), and then decode with no prefills in between, so their TPOT is the decode-only
iteration. With fixed lengths (`lengths = "fixed"`, the default) the loop stays in step where the wave's
members start decoding together (not under vLLM's chunked prefill once a wave outgrows one iteration's
budget: `closed_loop_wave_share`), so every request sees the wave (LMDeploy's profile_generation rows:
TPOT at 2048-token prompts equals that at 128-token ones); with varied lengths and `num_requests` N >
users only the first users / N of the requests do, the rest arrive into the steady state, and the figure
is the median of that mixture (`mixed_median_ttft_s`, `closed_loop_wave_share`).
An offline run (all requests submitted at once, `vllm bench throughput`, TRT-LLM max-throughput
tables) runs at the batch cap the whole time, and its median request first waits for the requests
admitted ahead of it (`offline_backlog`); with varied output lengths (ShareGPT) it ends in a drain of ever smaller
batches, which lowers its throughput (`varied_offline_throughput`); a rate run (Poisson arrivals) runs as many
sequences as arrive within one request's duration (Little's law, L = lambda W), up to the cap; a rate run
of a stated number of requests is followed through time from an idle engine (`rate_run_point`), and with
varied output lengths it too ends in that drain after its last request starts (`varied_drain_s`); past its
capacity its queue grows through the run, and near it the queue's fluctuation sets the median's wait
(`median_slot_wait_s`). A wave of more users than the cap reports its median request (`wave_median_ttft_s`),
and the mean apart.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import deque
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators.engines import (
    TRTLLM_DEFAULT_MAX_BATCH_SIZE,
    TRTLLM_LEGACY_MAX_BATCH_SIZE,
    lmdeploy_default_max_batch_size,
    mlc_separate_prefill,
    sglang_default_chunked_prefill,
    trtllm_chunked_context_budget,
    trtllm_default_max_batch_size,
    vllm_big_gpu_defaults,
    vllm_prefill_budget,
)
from mlrig.estimators.kv_limit import VllmKvAdmission, vllm_admission_pool_tokens
from mlrig.estimators.memory import largest_true
from mlrig.estimators.performance import (
    ERROR_BAND,
    PassTime,
    ServingPoint,
    _setup,
    decode_step,
    error_band,
    estimate_inference,
    prefill_pass,
    request_path_s,
    vllm_chunked_iterations_extra_s,
)
from mlrig.results import Performance

if TYPE_CHECKING:
    from collections.abc import Callable

    from mlrig.catalog.arch import ModelArch
    from mlrig.catalog.gpus import GPU
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.workload import Plan, WorkloadSpec

# Engines' default batch caps (running sequences), when the plan gives no max_num_seqs:
# - vLLM: --max-num-seqs 256; V1 (>= 0.8) raises it to 1024 on GPUs with >= 70 GiB other than the A100
#   (engine/arg_utils.py `_set_default_args`; engines.vllm_big_gpu_defaults, as memory._vllm_activation_bytes);
# - TensorRT-LLM: max_batch_size 256 before 0.14, 2,048 from 0.14 (trtllm-build / BuildConfig default,
#   engines.trtllm_default_max_batch_size);
# - LMDeploy TurboMind: max_batch_size 128 (TurbomindEngineConfig default, v0.2-v0.5), by the device from v0.6
#   (engines.lmdeploy_default_max_batch_size); v0.1's profile_throughput ran at the concurrency given;
# - TGI: --max-concurrent-requests 128; SGLang: no fixed cap (sized from the KV pool).
# Engines without continuous batching serve one request at a time unless told otherwise: HF
# transformers `generate`, gpt-fast, TinyChat and mlx-lm's server; llama.cpp's server runs
# `--parallel` slots (give it as max_num_seqs), 1 assumed. Under a concurrency / rate load the
# other users wait for the slot (serving.load_point's slot wait).
DEFAULT_MAX_NUM_SEQS: dict[str, int | None] = {
    "vllm": 256, "trt-llm": TRTLLM_DEFAULT_MAX_BATCH_SIZE, "trt-llm-2023": TRTLLM_LEGACY_MAX_BATCH_SIZE,
    "lmdeploy": 128, "tgi": 128, "sglang": None,
    "transformers": 1, "gpt-fast": 1, "tinychat": 1, "tinychat-2024": 1, "mlx": 1, "llama.cpp": 1, "llama.cpp-2024": 1,
    "llama.cpp-hip": 1, "llama.cpp-metal": 1,
}
VLLM_V1_BIG_GPU_MAX_NUM_SEQS = 1024


@dataclass(frozen=True)
class LoadPoint:
    """One serving load, steady state."""

    running: int  # sequences decoding together
    step_s: float  # one iteration: n decodes + the mean prefill share
    tpot_s: float  # between a request's output tokens: iterations, less the prefills a wave front-loads
    throughput_tok_s: float  # output tokens/s, all sequences
    requests_per_s: float
    ttft_s: float
    queue_s: float  # part of TTFT spent waiting (iteration end, prefill queue, a free slot)
    bound: str
    saturated: bool  # a rate load above what the engine can serve
    ttft_mean_s: float | None = None  # the mean TTFT where it differs from the median `ttft_s` (`wave_median_ttft_s`)
    capacity_rps: float | None = None  # rate loads: requests/s a full batch completes, the most the engine serves
    # vLLM rate runs under KV admission: requests that got a first token before the first preemption
    first_fill_requests: float | None = None


def batch_cap(plan: Plan, engine: str, gpu: GPU, v1: bool) -> int | None:
    """The running-sequence cap: the plan's max_num_seqs, else the engine's default (see above)."""
    w = plan.workload
    if w.max_num_seqs is not None:
        return w.max_num_seqs
    if engine == "vllm" and v1 and vllm_big_gpu_defaults(gpu):
        return VLLM_V1_BIG_GPU_MAX_NUM_SEQS
    if engine == "lmdeploy":
        return lmdeploy_default_max_batch_size(gpu, w.engine_version)
    if engine == "trt-llm":
        return trtllm_default_max_batch_size(w.engine_version)
    return DEFAULT_MAX_NUM_SEQS.get(engine)


def prefill_budget(plan: Plan, engine: str, gpu: GPU, v1: bool, model_max_len: int | None = None,
                   arch: ModelArch | None = None) -> int | None:
    """Tokens per iteration under chunked prefill: the plan's max_num_batched_tokens, else vLLM V1's
    default, vLLM V0's long-context default (`vllm_v0_default_budget`), SGLang's `--chunked-prefill-size`
    default (`sglang_default_chunked_prefill`) or LMDeploy TurboMind's iteration budget
    (`lmdeploy_iteration_budget`); None where whole prompts are prefilled in one pass (vLLM V0 below 32K
    context or with `enable_chunked_prefill = false`, TensorRT-LLM with neither chunked context
    (`engines.trtllm_chunked_context_budget`) nor max_num_batched_tokens, LMDeploy before v0.1.0a2).
    `model_max_len`: the model's maximum context (max_position_embeddings), TurboMind's default session_len
    and vLLM's default max_model_len."""
    w = plan.workload
    if engine == "lmdeploy":
        return lmdeploy_iteration_budget(plan, gpu, model_max_len)
    if engine == "vllm":
        return vllm_prefill_budget(plan, gpu, v1, model_max_len, arch)
    if engine == "tgi":
        return tgi_chunk_budget(plan)
    if engine == "trt-llm":  # chunked context (`enable_chunked_prefill`): max_num_tokens
        return trtllm_chunked_context_budget(w.enable_chunked_prefill, w.engine_version, w.max_num_seqs,
                                             w.max_model_len, w.max_num_batched_tokens)
    if engine == "mlc" and mlc_separate_prefill(w.engine_version):
        # prompts prefilled whole in steps of their own (`separate_prefill_passes`); its prefill chunk
        # (max_num_batched_tokens) caps such a step's prompts (`whole_prompt_pass_cap`)
        return None
    if w.max_num_batched_tokens is not None:
        return w.max_num_batched_tokens
    if engine == "sglang":
        return sglang_default_chunked_prefill(gpu.memory_gib, plan.workload.engine_version)
    return None


def lmdeploy_iteration_budget(plan: Plan, gpu: GPU, model_max_len: int | None) -> int | None:
    """Tokens of one TurboMind iteration, its decodes included (engines.lmdeploy_prefill_budget).

    From PR #775 (v0.1.0a2) TurboMind runs the running sequences' decodes and the waiting prompts' tokens in
    one `forwardUnified` pass per iteration (LlamaBatch.cc `Forward`), the prompts taken first come, first
    served into a token budget, a prompt that does not fit chunked: Sarathi-Serve's stall-free batching,
    which `load_point` models as chunked prefill. The budget is session_len (the plan's max_model_len, else
    the model's maximum context, TurboMind's default) up to v0.2.4, min(8,192, session_len) to v0.5 and
    8,192 prompt tokens beside up to max_batch_size decodes from v0.6; a plan's max_num_batched_tokens is
    taken as max_prefill_token_num (from v0.6 the decodes come on top). Before PR #775 (v0.1.0a1 and
    older) every admitted prompt is prefilled in passes of its own before the decode step: None, as for
    vLLM V0 (`separate_prefill_passes`). LMDeploy's own A100 tables (LMDEPLOY-*, measured on v0.1.0a1)
    show that older scheduler: 16 users of 2,048-token prompts wait on average 0.89 of the whole wave's
    prefill (Llama-2-13B 3.44 s of 16 x 0.242 s; InternLM-20B 3.09 of 3.47 s; Llama-2-70B 5.78 of 6.43 s)
    where FCFS chunks would give about half."""
    from mlrig.estimators.engines import lmdeploy_prefill_budget, lmdeploy_pytorch_engine, lmdeploy_unified_iterations

    w = plan.workload
    version = w.engine_version
    if lmdeploy_pytorch_engine(w.engine, version):
        return None  # the PyTorch engine prefills in passes of its own (engines.lmdeploy_pytorch_engine)
    if not lmdeploy_unified_iterations(version):
        return None
    cap = batch_cap(plan, "lmdeploy", gpu, True)
    if w.max_num_batched_tokens is not None:
        from mlrig.estimators.engines import LMDEPLOY_FORWARD_TOKEN_NUM_FROM, before

        forward = not before(version, LMDEPLOY_FORWARD_TOKEN_NUM_FROM)
        return w.max_num_batched_tokens + ((cap or 0) if forward else 0)
    session_len = w.max_model_len or model_max_len or max(w.context, 2048)
    return lmdeploy_prefill_budget(version, session_len, cap)


def tgi_chunk_budget(plan: Plan) -> int | None:
    """TGI's chunked-prefill budget (from 3.0, `engines.tgi_chunked_prefill`): the plan's max_num_batched_tokens
    (`--max-batch-prefill-tokens`), else 4,096; None before 3.0, whose router prefills new batches as passes of
    their own (`tgi_offline_burst`)."""
    from mlrig.estimators.engines import TGI_CHUNKED_PREFILL_TOKENS, tgi_chunked_prefill

    w = plan.workload
    if not tgi_chunked_prefill(w.engine_version):
        return None
    return w.max_num_batched_tokens or TGI_CHUNKED_PREFILL_TOKENS


# `tgi_offline_burst` with varied output lengths: request i ends after O (1 - s + 2 s u_i) tokens, u_i spread evenly
# over [0, 1) (a golden-ratio sequence, independent of the arrival order): lengths uniform within +-s of the mean.
# s = 1/2 keeps the dstack sonnet bursts' longest requests ~1.3-1.5 mean outputs long, as their durations show
# (DSTACKTGI-0006..-0014: 4-16 requests end ~1.2-1.4 x the mean after they start); the exponential tail of
# `varied_offline_throughput` would put them at ~H_N (2.7 x at 8 requests).
TGI_VARIED_SPREAD = 0.5


def tgi_burst_schedule(n_requests: int, per_batch: int, cap: int, ratio: float, lengths: list[int],
                       max_waiting_steps: int | None = None) -> tuple[list[tuple[str, int]], list[tuple[int, int]]]:
    """The forward passes TGI's router (before 3.0) runs for a burst of `n_requests` sent at once, and where each
    request starts and ends in them (`engines.tgi_chunked_prefill` names the source and the rules):
    - the first request finds the batching loop idle and is prefilled alone; the others arrive meanwhile;
    - before each decode step the router takes a new batch from the queue, FCFS, of at most `per_batch` requests
      (`max_batch_prefill_tokens` // prompt) and `cap` running in all, but only if at least floor(running x
      `ratio`) wait and the new batch holds that many (`waiting_served_ratio`), or once `max_waiting_steps`
      decode steps (`max_waiting_tokens`, 20) have passed since the last admission;
    - a new batch is a prefill pass of its own; then one decode step of all running requests.
    `lengths[i]`: request i's output tokens (its first comes from its prefill). Returns the passes, ("prefill", k)
    and ("decode", running), and per request (its prefill's index, the index of the pass giving its last token)."""
    from mlrig.estimators.engines import TGI_MAX_WAITING_TOKENS

    wait_steps = TGI_MAX_WAITING_TOKENS if max_waiting_steps is None else max_waiting_steps
    ops: list[tuple[str, int]] = []
    spans: list[tuple[int, int]] = [(0, 0)] * n_requests
    running: list[list[int]] = []  # [request, tokens left]
    waiting, admitted, since = n_requests, 0, 0
    while waiting > 0 or running:
        take = 1 if admitted == 0 else min(waiting, per_batch, max(0, cap - len(running)))
        min_size = None if (not running or since >= wait_steps) else math.floor(len(running) * ratio)
        if take > 0 and (min_size is None or take >= min_size):
            ops.append(("prefill", take))
            for i in range(admitted, admitted + take):
                spans[i] = (len(ops) - 1, len(ops) - 1)
                if lengths[i] > 1:
                    running.append([i, lengths[i] - 1])
            waiting -= take
            admitted += take
            since = 1
        if not running:
            continue
        ops.append(("decode", len(running)))
        since += 1
        still = []
        for seq in running:
            seq[1] -= 1
            if seq[1] <= 0:
                spans[seq[0]] = (spans[seq[0]][0], len(ops) - 1)
            else:
                still.append(seq)
        running = still
    return ops, spans


def tgi_offline_burst(r: ResolvedPlan, n_requests: int, running_cap: int, model_max_len: int | None) -> LoadPoint:
    """An offline burst (all `n_requests` sent at once) through TGI's router before 3.0: its passes
    (`tgi_burst_schedule`) priced as `prefill_pass` of the new batch's prompts and `decode_step` of the running
    requests. A prefill is a pass of its own that the running requests wait for, so their TPOT, (e2e - TTFT) /
    (O - 1) as vLLM's benchmark_serving computes it, carries every prefill admitted while they decode. The
    prefill batch is `engines.tgi_max_batch_prefill_tokens` // prompt requests, the ratio
    `engines.tgi_waiting_served_ratio`. Output lengths: the plan's mean, or with `lengths = "varied"` spread as
    TGI_VARIED_SPREAD says (with `lengths = "uniform"` as the client draws them, +-`range_ratio` of the mean),
    scaled so that their mean is the plan's O (the golden-ratio sequence's first few points alone average less: one
    request was half as long as the plan says, two 0.81 O). Returns the medians over the
    requests (TTFT with the front end) and the run's output tokens over its duration. Scaling moved the fit rows
    DSTACKTGI-0038 throughput -16% -> -6%, -0040 TPOT +15% -> +6%, -0044 -6% -> +1%; -0047 -2% -> +3%, -0049
    -35% -> -37%.
    DSTACKTGI-* (fit; TGI sha-11d7af7, Llama-3.1-405B on 8x MI300X, 10,000-token prompts, 13 per prefill
    batch): at 64 requests the median request's TPOT is 872 ms where a decode step is ~60 ms: it decoded while
    the ~27 prompts admitted after it were prefilled (~100 s over 119 tokens)."""
    from mlrig.estimators.engines import tgi_max_batch_prefill_tokens, tgi_waiting_served_ratio

    w = r.workload
    prompt, out = prefill_tokens(w), max(1, w.output_tokens)
    budget = tgi_max_batch_prefill_tokens(w.max_num_batched_tokens, w.max_model_len, model_max_len, w.prompt_tokens)
    per_batch = max(1, budget // max(1, w.prompt_tokens))
    golden = (math.sqrt(5.0) - 1.0) / 2.0
    spread = TGI_VARIED_SPREAD if w.lengths == "varied" else w.length_spread  # uniform: the client's own spread
    shares = [1.0 - spread + 2.0 * spread * ((i * golden) % 1.0) for i in range(n_requests)]
    mean_share = sum(shares) / len(shares) if shares else 1.0  # the plan's O is the lengths' mean
    if mean_share <= 0.0:  # one request at spread 1 (its golden-ratio point is 0): it is the mean
        shares, mean_share = [1.0] * n_requests, 1.0
    lengths = [max(1, round(out * x / mean_share)) for x in shares]
    ops, spans = tgi_burst_schedule(n_requests, per_batch, max(1, running_cap), tgi_waiting_served_ratio(
        w.engine_version), lengths)
    ctx = w.mean_decode_context
    cost: dict[tuple[str, int], PassTime] = {}
    ends: list[float] = []
    t = 0.0
    for op in ops:
        if op not in cost:
            cost[op] = prefill_pass(r, op[1], prompt) if op[0] == "prefill" else decode_step(r, op[1], ctx)
        t += cost[op].seconds
        ends.append(t)
    front = frontend_s(r)
    ttft = statistics.median(ends[a] for a, _ in spans) + front
    tpots = [(ends[b] - ends[a]) / (n - 1) for (a, b), n in zip(spans, lengths, strict=True) if n > 1]
    single = decode_step(r, 1, ctx)
    tpot = statistics.median(tpots) if tpots else single.seconds
    throughput = sum(lengths) / max(t, 1e-12)
    decodes = [c for op, c in cost.items() if op[0] == "decode"]
    bound = max(decodes, key=lambda c: c.seconds).bound if decodes else single.bound
    own = prefill_pass(r, 1, prompt).seconds + front
    running = max((op[1] for op in ops if op[0] == "decode"), default=1)
    return LoadPoint(running=running, step_s=max((c.seconds for c in decodes), default=single.seconds),
                     tpot_s=tpot, throughput_tok_s=throughput, requests_per_s=throughput / out, ttft_s=ttft,
                     queue_s=max(0.0, ttft - own), bound=bound, saturated=False)


def fused_prefill_s_per_token(own: PassTime, prompt: int, budget: int | None) -> float:
    """Time per prompt token that the steady state's prefills add to a continuous-batching iteration.

    Under chunked prefill (`budget` not None: vLLM V1 or a plan's max_num_batched_tokens; not SGLang, whose
    budget caps prefill passes of their own: `sglang_prefill_first`) the
    scheduler packs the waiting prompts' tokens into the same forward pass as the running decodes
    (vLLM V1 "unified" scheduler; Agrawal et al. 2024, Sarathi-Serve, arXiv 2403.02310, "stall-free
    batching": a hybrid batch reads the weights once for its decode and prefill tokens). The weights are
    read for the decodes anyway, so a prompt token adds its arithmetic only: the compute time of its own
    prefill pass per token, `own.compute_s / prompt`, not that pass's wall time, which for a short prompt
    is mostly one more read of all the weights (a 40-token prompt of a 7B model on a 768 GB/s card:
    ~0.5 ms per token as a pass of its own, ~0.1 ms of arithmetic). Without chunked prefill (vLLM V0,
    TensorRT-LLM and LMDeploy as modelled here) a prefill is an iteration of its own that stalls the
    decodes and reads the weights again: the pass's full time per token, as before. A tensor-parallel
    pass's all-reduces grow with its tokens, so they stay in (`own.comm_s`). The same share is the
    prefill queue's service time and a chunked prompt's own work in `load_point`'s TTFT (its chunks'
    iterations are counted there already). No factor is fitted: the compute time is the engine's
    prefill GEMM rate (efficiency.COMPUTE_EFF).
    Rows: LDSINGH-* (vLLM 0.23 on an RTX A6000, ~40-token prompts at 64-256 users: TPOT 27.5-53 ms,
    priced with a weight read per prompt 54-119 ms, now 34-75 ms; validate's TPOT vllm gddr p90
    110 % -> 44 %, throughput vllm gddr p90 57 % -> 23 %); the held-out VLLMFP8KV TTFT rows (20k-token
    prompts, 8 users on an H100) 38 % -> 15 % median, which had paid the weight read once more per chunk."""
    t_p = own.seconds / prompt
    if budget is None or not own.compute_known:
        return t_p
    return min(t_p, (own.compute_s + own.comm_s) / prompt)


def sglang_prefill_first(r: ResolvedPlan) -> bool:
    """Whether the engine runs a batch of new prompts as a forward pass of its own, with the running decodes
    paused for it, rather than inside the decode iterations (`fused_prefill_s_per_token`).

    SGLang's scheduler is prefill-first: each round `get_next_batch_to_run` first asks
    `get_new_batch_prefill` for a batch of waiting prompts and runs it alone if there is one, and only else
    the decode batch; mixing a prefill chunk into the decode batch ("mixed-style chunked prefill") happens
    only under `--enable-mixed-chunk`, off by default (sgl-project/sglang python/sglang/srt/managers/
    scheduler.py and server_args.py `enable_mixed_chunk: bool = False`, from 0.3 through the 0.5 series).
    No plan key turns it on, so every SGLang plan takes the default. The prompts that reached the
    waiting queue while the previous forward pass ran are admitted together (`PrefillAdder`, FCFS), up to
    `--chunked-prefill-size` tokens (`prefill_budget`) and `--max-prefill-tokens` (16,384, never below the
    budget's default tiers): `sglang_prefill_batch`. So, in `load_point` and `rate_run_point`:
    - a prompt token costs its share of a whole prefill pass (`separate_prefill_s_per_token`: the pass's
      weight read and overheads shared by that pass's prompts only), not its arithmetic alone
      (`fused_prefill_s_per_token`), and the running decodes wait for it, so TPOT carries it;
    - the budget does not cap the running decodes (`chunked_decode_cap` is vLLM's): the KV pool and the
      batch cap do;
    - a request's own TTFT is its pass (with the others admitted beside it) and the overlap scheduler's
      first-token iteration (`first_token_emission_s`).
    A colleague's bound of one pass per prompt moved SGLang HBM throughput 41 % -> 32 % median but GDDR
    2.0 % -> 8.4 %; batching the arrivals as above leaves GDDR at 1.8 % (INFBENCHL4's lock-step waves, held
    out). Fit rows: with COMPUTE_EFF["sglang"]["hbm"] at vLLM's 0.55 this structure alone moved the scope's
    fit rows (ACCELMARK, DSTACKR1) TTFT 19 % -> 21 % median and TPOT 7 % -> 13 %, almost all from AccelMark's
    A100 rows (a 255-token pass the roofline prices at 27 ms where the rows show ~20 ms); with
    SGLang's own prefill rate fitted on its single-user rows (efficiency.py, 0.70) TTFT 15 %, TPOT 7 %,
    throughput 23 % -> 24 % (DeepSeek-R1 on 8x H200 stays ~0.8x: its early block-FP8 MoE prefill, not this).
    The structure is the engine's (its source), not a fit."""
    return r.engine == "sglang"


def sglang_prefill_batch(n: int, prompt: int, out: int, budget: int | None, together: bool = False) -> int:
    """Prompts in one of SGLang's prefill passes in a steady state of `n` running sequences
    (`sglang_prefill_first`): the requests that arrived during one decode iteration. In steady state as
    many arrive as complete, n / O per iteration (a closed loop's users send their next request as the
    last one ends; Poisson arrivals at Little's rate), at least one (a pass holds a whole prompt, so with
    n < O a pass runs every O / n iterations). When the requests run in step (`together`: fixed lengths in
    a closed loop or an offline run, every request of a round ends in the same iteration and the next round
    arrives at once) all n arrive together. At most what fits the budget: a prompt longer than the
    budget is prefilled in chunks of passes of its own, back to back (the scheduler's `chunked_req` is
    continued first)."""
    per_pass = max(1, budget // max(1, prompt)) if budget is not None else 10**9
    arriving = n if together else round(n / max(1, out))
    return max(1, min(per_pass, arriving))


def sglang_rate_pass(want_per_s: float, decode_pass_s: float, prompt: int, budget: int | None,
                     limit: int) -> int:
    """Prompts in one of SGLang's prefill passes while Poisson arrivals come at `want_per_s` (arrivals and
    any queue) and a decode pass takes `decode_pass_s` (`rate_run_point`'s fluid model).

    SGLang's scheduler admits, before each decode pass, every prompt that reached the waiting queue while the
    last pass ran (`sglang_prefill_first`: `get_new_batch_prefill`, FCFS, up to `--chunked-prefill-size`
    tokens), so a pass holds want x t_dec prompts, at least one, at most what the budget and the batch's
    limit take. `sglang_prefill_batch` has the steady state's n / O, which is the same where arrivals equal
    completions; a finite run's ramp (n still growing) and its backlog do not. Without it every arrival of a
    fast run was priced as a pass of its own: ACCELMARK-0080 (fit: SGLang 0.5.6 on an A100 40GB, 300
    requests at 100 req/s, prompts cached by the radix cache so each pass computes one token per prompt)
    paid a weight read per request, 10 ms, so the GPU fell behind at ~90 req/s and the median request
    waited 0.8 s; measured p50 TTFT 51 ms (the passes of ~3 prompts keep up)."""
    per_pass = max(1, budget // max(1, prompt)) if budget is not None else 10**9
    arriving = max(1, math.ceil(want_per_s * decode_pass_s - 1e-9))
    return max(1, min(per_pass, limit, arriving))


def in_step(w: WorkloadSpec, rate: float | None) -> bool:
    """Whether a load's requests run in step (`sglang_prefill_batch`'s `together`): an offline run of fixed
    lengths or a closed loop whose every round is a wave (`closed_loop_wave_share`); never Poisson arrivals."""
    if rate is not None:
        return False
    if w.load == "offline":
        return w.lengths == "fixed"
    return closed_loop_wave_share(w) >= 1.0


def vllm_v0_whole_prompt_tokens(r: ResolvedPlan) -> int | None:
    """Prompt tokens one prefill pass of vLLM's V0 engine holds where it prefills whole prompts (no chunked
    prefill); None for other engines and for V1. V0's default scheduler is prefill-first: each step it first
    admits the waiting prompts that fit the token budget and the free sequence slots and runs them as a
    prefill-only step, the running decodes waiting ("By default, vLLM scheduler prioritizes prefills and doesn't
    batch prefill and decode to the same batch", vLLM docs 0.6, "Performance and Tuning: Chunked Prefill";
    vllm/core/scheduler.py `_schedule_default`: `_schedule_prefills` before `_schedule_running`). The budget
    without chunking is max_num_batched_tokens, by default max(max_model_len, 2048) (vllm/engine/arg_utils.py /
    config.py SchedulerConfig, 0.5-0.7: `_DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048`). So the prompts that wait
    together share one pass (its weight read, its per-layer host time under tensor parallelism), as SGLang's
    do (`sglang_prefill_batch`); a pass per prompt over-priced V0 where the pass's fixed costs dominate (a
    7B model at TP 8, whose eager prefill pass is mostly host time). Structure from the source, no factor.
    Rows it moves: Llama-2-7B on MI300X under vLLM 0.6.3, 1,000 x 512 / 128 tokens at TP 1 / 4 / 8
    (LHLMI300X-0145 / -0148 / -0146, fit) measured 23.1 / 40.6 / 54.9 req/s, priced 21.1 / 22.6 / 22.2 before
    and 21.6 / 38.1 / 43.7 with it; VLLMMI300X-0001 (0.6.2, 405B, fit) 0.84 -> 0.95 of the measured. Against it:
    DSTACKR1's vLLM 0.7.3 DeepSeek-R1 offline rows (fit, already 1.2-1.4x fast) 11 % -> 12 % median, and three
    held-out ACCELMARKGD GDDR throughput rows 23 % -> 25 %."""
    from mlrig.estimators.engines import vllm_v1

    w = r.workload
    if r.engine != "vllm" or vllm_v1(w.engine_version):
        return None
    if w.max_num_batched_tokens is not None:
        return w.max_num_batched_tokens
    return max(w.max_model_len or r.arch.max_position_embeddings or 2048, 2048)


def separate_prefill_s_per_token(r: ResolvedPlan, n: int, budget: int | None, together: bool = False) -> float:
    """Time per prompt token of SGLang's prefill passes at `n` running sequences: a pass of
    `sglang_prefill_batch` prompts (its weight read shared by its prompts only, not by the decodes, and
    the decodes paused meanwhile), per token. Where `fused_prefill_s_per_token` takes a prompt token's
    arithmetic only (the weights are read for the decodes anyway), here every pass reads all the weights
    again: for a few short prompts on a big model that read is most of the pass."""
    w = r.workload
    prompt, out = prefill_tokens(w), max(1, w.output_tokens)
    k = sglang_prefill_batch(n, prompt, out, budget, together)
    return prefill_pass(r, k, prompt).seconds / (k * prompt)


def prefill_tokens(w: WorkloadSpec) -> int:
    """Prompt tokens a request's prefill computes: the prompt less the `cached_prompt_tokens` its engine's
    prefix cache already holds (vLLM's automatic prefix caching, `--enable-prefix-caching`; SGLang's radix
    cache, Zheng et al. 2024 "SGLang", arXiv 2312.07104, sec. 3), at least one: the last prompt token is
    always computed, for its logits. The cached tokens' KV is still in the sequence's context, so the
    decodes read it (`decode_step` at the full context); the prefill's attention over the cached prefix is
    not priced, which under-counts prompts whose cached part is long. A10GVS-* (held out: 4 prompts of ~51
    tokens cycled over 100 requests with vLLM's prefix caching and SGLang's radix cache on an A10G) is such
    a run."""
    return max(1, w.prompt_tokens - w.cached_prompt_tokens)


def board_power_duty(r: ResolvedPlan, rate: float) -> float:
    """The share of its board's sustained power a Poisson-rate load at `rate` requests/s asks of each GPU: the
    tensor FLOPs of its requests (each prompt's prefill and its output tokens, `prefill_cost` of prompt + output
    tokens, split over the tensor-parallel GPUs) per second, over the dense FLOP rate the board power sustains
    (efficiency.BOARD_TFLOP_PER_J x watts, `hardware.board_power_tflops` x efficiency.BOARD_BOUND_GEMM_EFF);
    1 where no bound is known or nothing arrives. Below 1 `performance.peak_tflops` prices the GEMMs at the rating.

    The bound is on average power, not on a pass: the board power the driver tracks is an average over a window
    (NVML API reference, nvmlDeviceGetPowerUsage, as cuda-python's cuda.bindings.nvml.device_get_power_usage
    reproduces it: "On Ampere (except GA100) or newer GPUs, the API returns power averaged over 1 sec interval"),
    and the SW power cap lowers the clocks while the power is at the limit (nvmlClocksThrottleReasonSwPowerCap: "SW
    Power Scaling algorithm is reducing the clocks below requested clocks"). The limiter's own window is not
    documented; about a second is assumed from that figure. The long matmul loops the bound is read from keep the
    tensor cores busy for seconds; a prefill of tens to a few hundred ms between idle or memory-bound decode steps
    runs at the rated clocks while the window's energy stays under the limit (the fit rows below show 45-200 ms
    prefills doing so). With a constant energy per FLOP (the bound's own
    assumption, linear in the watts) a window's energy is its FLOPs x J/FLOP whatever the clock: a faster pass draws
    more power for less time. So a load asking for a share d < 1 of the sustained rate stays under the limit with its
    passes at the rated clocks, and one at d >= 1 is held at the bound. A load the card does not keep up with even at
    the rating is held at the bound too (`serving_performance`): its queue keeps the card busy, never idle, so the
    average is the busy power. What the decode steps' weight streaming and the card's idle floor draw is not counted
    (so a decode-heavy load is priced a little faster than the limiter allows), nor the spread of a window's energy
    about its mean under Poisson arrivals (windows with more arrivals than d x W of energy, throttled in part).
    Fit rows: Mooncake's vLLM 0.6.2 runs on an A10 (MOONCAKEA10-*: Qwen2.5-7B GPTQ, 245- and 1,012-token
    prompts at 2-8 req/s, d = 0.10-0.43), whose median TTFTs of 56-91 ms for 245-token prompts sit below what the
    A10's bound (78.75 of 125 TFLOPS) gives for the prefill alone (73 ms): their ten TTFTs +25..+155 % before,
    -24..+22 % after (`mlrig validate`: TTFT vllm gddr p90 60 -> 52 %). Their TPOTs, with 6 output tokens mostly the
    other prompts' prefills, move from -25..+59 % to -52..+15 % (the chunked-prefill runs at 8 req/s and the
    1,012-token one come out 28-52 % fast: the decode steps' power, not counted, is the candidate). Checked, held out:
    ACCELMARKGD-0054 (RTX 6000 Ada, 5 req/s) -10 -> -13 %. Nothing fitted: the bound's figures and the load's FLOPs."""
    from mlrig.estimators.hardware import board_power_tflops
    from mlrig.estimators.performance import gemm_dtype_on, prefill_cost

    w = r.workload
    bound = board_power_tflops(r.gpu, gemm_dtype_on(r.gpu, r.precision, r.engine or "", w.engine_version))
    if bound is None or rate <= 0:
        return 1.0
    tokens = prefill_tokens(w) + max(1, w.output_tokens)
    flops = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, tokens).flops
    tp = max(1, r.hardware.tensor_parallel)
    return min(1.0, rate * flops / tp / (bound * eff.BOARD_BOUND_GEMM_EFF * 1e12))


def board_power_duty_note(r: ResolvedPlan) -> str:
    """The explanation's words for a plan priced at a power duty below 1 (`board_power_duty`) where that lifts its
    GEMMs above the sustained bound; empty otherwise."""
    from mlrig.estimators.performance import gemm_dtype_on, peak_tflops

    if r.gemm_duty >= 1.0:
        return ""
    dtype = gemm_dtype_on(r.gpu, r.precision, r.engine or "", r.workload.engine_version)
    sustained = peak_tflops(r.gpu, dtype, r.engine or "")
    burst = peak_tflops(r.gpu, dtype, r.engine or "", r.gemm_duty)
    if sustained is None or burst is None or burst <= sustained:
        return ""
    return (f"; the load asks for {r.gemm_duty:.0%} of the power {r.gpu.name} sustains, so its prefills run at "
            f"{burst:.0f} dense TFLOPS, above the {sustained:.0f} of a sustained load (board power is averaged over "
            "about a second)")


def _iteration(r: ResolvedPlan, n: int, prefill_s_per_token: float) -> tuple[float, str]:
    """One continuous-batching iteration: `n` decodes plus the prompts' prefill share per output token."""
    dec = decode_step(r, n, running_decode_context(r.workload))
    return dec.seconds + n * _own_prompt_share_s(r, prefill_s_per_token), dec.bound


def running_decode_context(w: WorkloadSpec) -> int:
    """Context tokens a running sequence's decode reads on average in a continuous batch: the prompt and the
    output it holds. Fixed lengths: half the output (`WorkloadSpec.mean_decode_context`). Varied lengths: the
    sequences running at a given step are the long ones (length-biased sampling), so they hold
    `running_output_tokens` = E[L^2] / (2 E[L]) output tokens each, not O / 2: O for uncapped exponential
    lengths, 220 for AccelMark's ShareGPT suite (O 343, C 512) where O / 2 is 172. The same time-average the
    KV pool is sized with (`running_slots`); first principles, nothing fitted. It moves the decode-bound
    serving rows with varied lengths, 127 of them by more than a point for the better and 29 for the worse:
    LMDeploy's ShareGPT throughput rows on HBM (fit LMDEPLOY-0193 +18% -> +9%, -0185 +9.5% -> -1.4%; against:
    -0177 +2.8% -> -9.3%), its requests/s scope's median 18% -> 10%."""
    held = running_output_tokens(w)
    if held is None:
        return w.mean_decode_context
    return max(1, w.prompt_tokens + round(held))


def _own_prompt_share_s(r: ResolvedPlan, prefill_s_per_token: float) -> float:
    """One request's own prompt share of an iteration in `_iteration` (its prompt spread over its outputs)."""
    w = r.workload
    return prefill_tokens(w) / max(1, w.output_tokens) * prefill_s_per_token


def chunked_decode_cap(budget: int, prompt: int, out: int) -> int:
    """Sequences that can be decoding at once in a chunked-prefill steady state.

    Every iteration holds at most `budget` tokens (vLLM's `max_num_batched_tokens`; not SGLang's
    `--chunked-prefill-size`, which caps its prefill passes only, the decodes running in passes of their own:
    `sglang_prefill_first`): the running requests' decode tokens first, waiting prompts' chunks in
    what is left (Agrawal et al. 2024, "Sarathi-Serve", OSDI '24, sec. 4; vLLM V1 scheduler). In steady
    state each request needs P prompt tokens per O outputs, so n decoding sequences need n (1 + P / O)
    tokens per iteration; when that exceeds the budget the prompts cannot be prefilled as fast as
    requests finish, and the decoding count settles at budget / (1 + P / O): the others wait in the
    queue or part-prefilled. An iteration then carries about `budget` tokens, and TPOT is its time.
    GPUStack's lab (GPUSTACK-*, gpt-oss-20b on one A100 under vLLM 0.11, 2,048-token budget, 100 prompts
    of 32,000 tokens with ~95 outputs at once) shows it: 2,048 / (1 + 337) = 6 decoding, and the measured
    21.6 output tok/s over a 278 ms median TPOT is 6.0 sequences; dennislee22's Qwen2-7B run on two
    A100s (DLVLLM-0037/-0038, vLLM 0.10.1, 500 x 1,021 / 127 tokens at once, 2,048-token budget) gives
    2,048 / (1 + 8.04) = 226 where its 1,037 tok/s x 206 ms TPOT implies 214 decoding (vLLM's cap of
    256 would run all 256)."""
    return max(1, math.floor(budget / (1.0 + prompt / max(1, out))))


def wave_ttft_s(r: ResolvedPlan, m: int, budget: int | None) -> float:
    """Mean TTFT of a wave of `m` requests that arrive together (a closed loop's start; with fixed
    lengths every later round too). Without chunked prefill the engine prefills the m prompts as one
    batch and every first token comes at its end; with chunked prefill (FCFS, `budget` tokens per
    iteration) the i-th prompt's first token comes with the iteration that finishes it, the
    ceil(i P / budget)-th (`wave_prompts_through`): (m + 1) / 2 prompts' work on average when each prompt
    fills iterations of its own, the whole batch when all m prompts fit one iteration's budget (vLLM V1's
    scheduler and SGLang's both take waiting prompts into one forward pass until the budget is spent).
    INFBENCHL4-* (held out; 16-64 users of ~46-token prompts, vLLM on an L4 with its 2,048-token budget):
    16 prompts are 736 tokens, one iteration, so every member waits for all 16."""

    prompt = prefill_tokens(r.workload)
    batch_s = prefill_pass(r, m, prompt).seconds
    if budget is None:
        return batch_s
    total = sum(min(m * prompt, math.ceil(i * prompt / budget) * budget) for i in range(1, m + 1))
    return batch_s * total / (m * m * prompt)


def wave_first_token_s(r: ResolvedPlan, m: int, budget: int | None, n: int) -> float:
    """Mean time from a wave of `m` requests reaching the scheduler to their first tokens leaving it, `n` running:
    the wave's prefill (`wave_ttft_s`) and the first-token emission (`first_token_emission_s`). Under SGLang's
    overlap scheduler a pass's first tokens wait for the next batch's launch, the wave's next pass where one
    follows (`sglang_wave_first_tokens`), so a wave of several passes gives each member one pass more and only
    the last pass's members the decode iteration. DSTACKR1-0071 / -0074 (fit: SGLang 0.4.2.post4 on 8x MI300X,
    DeepSeek-R1, closed loops of 4 / 8 users of fixed 3,200-token prompts, 8,192-token passes: 2 / 4 passes a
    wave) measured median TTFTs 1.19 / 1.26 x what the wave's mean prefill with a decode iteration gave."""
    if not sglang_overlap(r) or m <= 0:
        return wave_ttft_s(r, m, budget) + first_token_emission_s(r, n)
    prompt = prefill_tokens(r.workload)
    batch_s = prefill_pass(r, m, prompt).seconds
    members = sglang_wave_first_tokens(m, prompt, budget)
    through = sum(tokens for tokens, _ in members) / (m * m * prompt)
    last = sum(1 for _, decode_next in members if decode_next) / m
    return batch_s * through + last * first_token_emission_s(r, n)


def wave_stagger_s(r: ResolvedPlan, m: int) -> float:
    """What a wave's members after the first wait for the iteration its first arrival started.

    A wave's requests do not reach the scheduler in the same instant: the client sends them one after
    another and each crosses the front end (`frontend_s`) on its own, so the first finds the engine idle and
    starts an iteration with its prompt alone; the others arrive during it and wait for it to end, as a
    closed loop's request waits for a running iteration (`iteration_wait_s`, with vLLM's async scheduling
    one iteration more), before they are prefilled together. The median member is one of them once m >= 2.
    The first prompt is then not in the others' batch: `load_point` prefills the remaining m - 1 after this
    wait. Not under SGLang's overlap scheduler, whose closed loops of 2-8 users take the two iterations of one
    user (`first_token_emission_s`).

    Why the first arrives alone (vLLM V1 source): the engine core's busy loop (v1/engine/core.py
    `_process_input_queue`) blocks on its input queue while idle, wakes on the first request, drains what else
    is queued at that instant and schedules; the wave's other requests leave the API server's one event loop
    after it (each `AsyncLLM.add_request`: input processing and a ZMQ send to the engine core, efficiency.
    FRONTEND_SERIAL_S_PER_REQUEST), so they usually miss that drain. Whether they do is a race of sub-millisecond
    host timings that a plan does not name.
    Chosen on fit rows (vLLM TTFT, closed loops of 2-8 users; predicted with / without this wait, against the
    measurement): WAYNETRT-0023 / -0059 / -0095 / -0113 / -0131 (H100s, 4 users) 21.5-32.9 ms measured, -7..+15 %
    with it, -20..-34 % without; WAYNETRT-0209 / -0227 (RTX PRO 6000, vLLM 0.18, 4 users) -5 / +8 % against
    -43 / -28 %; WMXL4-0005 / -0008 / -0011 (L4, vLLM 0.23, 2-8 users) -33..-41 % against -44..-53 %. The
    AZIR5070TI-0068 / -0071 / -0074 / -0092 / -0095 / -0098 rows (RTX 5070 Ti, vLLM 0.13 behind WSL2 and Docker, an
    aiohttp client sending each wave at once) go the other way: 2 users measure what 1 user does (17.8 / 15.2 ms
    against 17.4 / 14.3), +22..+134 % with the wait, -18..+36 % without, as if the wave reached the engine in one
    drain. Over the 335 vLLM / SGLang / TensorRT-LLM TTFT fit rows the median / p90 error is 16.3 / 48.5 % with it,
    17.8 / 46.5 % without; half the wait gives 16.8 / 49.3 (checked 2026-11-25): the whole wait is kept, and
    AZIR's host is the exception the plan cannot name. Those figures priced AZIR's 0.13 with async scheduling's extra
    iteration, which vLLM turns on by default only from 0.14 (engines.VLLM_ASYNC_SCHEDULING_FROM): without it the
    same rows are +67 / +49 / -3 / +60 / -3 / -8 % (2 / 4 / 8 users, FP8 then NVFP4); the 2-user waves still
    measure no wait at all, which the engine core's loop does not explain (v1/engine/core.py `_process_input_queue`
    drains only what is queued when the first request wakes it). Held out, checked only: A10GVS-* (2-8 users, vLLM
    0.18 on an A10G) median TTFT 90-97 ms against 40 ms at one user, about three ~30 ms iterations.

    A wave of two is priced like a larger one (its median member waits), although a numpy median of waves of two
    is the mean of a member that waits and one that does not: halving the wait for m = 2 (tried in s36-vgddr) moved
    the fit rows AZIR5070TI-0068 / -0092 +67 / +60 % -> +50 / +46 % but WMXL4-0005 -27 -> -39 %, and the held-out
    A10GVS 2-user rows -10..-13 % -> -34..-36 %: both members of those waves wait, so the rule was not kept."""
    if m < 2 or sglang_overlap(r):
        return 0.0
    first = prefill_pass(r, 1, prefill_tokens(r.workload)).seconds
    return iteration_wait_s(r, first, others=1, closed_loop=True, prefill_running=True)


# SGLang releases with the overlap ("zero-overhead") scheduler on by default: sgl-project/sglang PR #2067
# (merged 2024-11-19), announced with v0.4 (LMSYS blog "SGLang v0.4", 2024-12-04); `--disable-overlap-schedule`
# turns it off (no plan key for that: a plan of such a run names a release before 0.4 or accepts the iteration).
# SGLang turns it off itself under pipeline parallelism (server_args.py `if self.pp_size > 1:
# self.disable_overlap_schedule = True`, read in the 0.5.3, 0.5.5, 0.5.7 and 0.5.10 wheels; 0.5.23's
# arg_groups/overrides.py: "Pipeline parallelism is incompatible with overlap schedule."), and for speculative
# decoding and hybrid Mamba models with the radix cache on (0.5.7), which plans do not express.
SGLANG_OVERLAP_FROM = (0, 4)


def sglang_overlap(r: ResolvedPlan) -> bool:
    """Whether the plan runs SGLang with its overlap scheduler (SGLANG_OVERLAP_FROM): not under pipeline
    parallelism, where SGLang disables it."""
    from mlrig.estimators.engines import before

    return (r.engine == "sglang" and not before(r.workload.engine_version, SGLANG_OVERLAP_FROM)
            and r.hardware.pipeline_parallel <= 1)


# The first SGLang release whose overlap scheduler launches batches from the scheduler's own thread (a FutureMap of
# the next tokens, managers/overlap_utils.py) instead of the TP worker thread of managers/tp_worker_overlap_thread.py:
# that file is in the 0.5.3 wheel and gone from the 0.5.4 one (read in the 0.4.7.post1, 0.5.3, 0.5.4, 0.5.5.post1 and
# 0.5.6 wheels). `sglang_arrival_behind_queued_batch` is priced for the worker-thread releases only.
SGLANG_IN_THREAD_OVERLAP_FROM = (0, 5, 4)


def sglang_arrival_behind_queued_batch(r: ResolvedPlan) -> bool:
    """Whether an open-loop arrival (Poisson, `load: rate`) under SGLang waits, beyond the running iteration, for
    one more whole iteration that the overlap scheduler had already scheduled: releases with the overlap scheduler
    (`sglang_overlap`) before SGLANG_IN_THREAD_OVERLAP_FROM.

    The loop (managers/scheduler.py `event_loop_overlap`, read in the 0.4.7.post1 wheel with
    tp_worker_overlap_thread.py) runs, each round: `recv_requests`, `get_next_batch_to_run`, `run_batch` (hand the
    batch to the TP worker thread, which launches it behind the GPU's running batch), then `process_batch_result` of
    the previous batch, which waits for that batch's output copy (`resolve_last_batch_result`: copy_done, and the
    new batch's launch_done). A round therefore ends when the GPU finishes batch k - 1, and the next round receives
    requests and schedules batch k + 1 as batch k starts. A request that reaches the scheduler while batch k runs is
    received only in the round after, at batch k's end, and its prefill is batch k + 2: it waits for the rest of
    batch k (half an iteration for a Poisson arrival, `iteration_wait_s`) and for the whole of batch k + 1. vLLM's
    async scheduling has the same shape and is priced the same way (`vllm_async_scheduling`).

    Chosen on the fit rows, no factor: the Poisson-rate rows of SGLang 0.4.6.post2 / 0.4.7.post1 with prompts the
    cache does not hold, LIVINFLYA100-0002/-0005/-0008 (Mistral-7B on an A100 PCIe, 1-4 req/s), LIVINFLYDSQ-0002/-0005
    /-0008 (the same host, an 8B) and KVCACHEDSGL-0002/-0005 (Llama-3.2-3B on an A100 80GB, 8 / 16 req/s), came out
    10-24 % fast, by 0.5-1.2 of their iteration (7-25 ms); with it they are -4..+11 % (KVCACHEDSGL-0008, 32 req/s,
    overloaded, +117 -> +129 %). The 0.5.6 Poisson fit rows
    (ACCELMARK-0076/-0078/-0080, SGLang's in-process AsyncEngine, radix-cached prompts) do not show it: with the
    iteration they would go from -4 / +7 / +13 % to +33 / +74 / +100 %. The loop order read in the 0.5.5.post1 and
    0.5.6 wheels (the batch launched on a forward stream from the scheduler's thread, the previous batch's results
    processed after it) predicts the same wait, so what takes it away there was not found in the source; the release
    boundary is the overlap scheduler's rewrite between the two sets of rows (SGLANG_IN_THREAD_OVERLAP_FROM), and the
    0.5.3 - 0.5.6 range is priced as before. Closed loops (`load: concurrency`) are left as they were: their fit rows
    (TONYGH200-*, 0.5.5.post3, 8 / 32 users on a GH200) and the check rows INFBENCHL4-0002/-0005 (0.4.6, 1 and 4 users
    on an L4, one TTFT) show no such iteration. Held out, checked only: DATACRUNCH-* (SGLang 0.4.0, Llama-3.3-70B /
    3.1-405B on 4 / 8 H200s, 1-16 req/s), whose TTFTs were 9-56 % fast."""
    from mlrig.estimators.engines import series_before

    return sglang_overlap(r) and series_before(r.workload.engine_version, SGLANG_IN_THREAD_OVERLAP_FROM)


def first_token_emission_s(r: ResolvedPlan, n: int, next_prefill_s: float = 0.0, p_prefill_next: float = 0.0) -> float:
    """Time from the end of a wave's prefill to its first tokens reaching the front end: one decode
    iteration of the `n` running sequences under SGLang's overlap scheduler, else nothing.

    The overlap scheduler launches batch k + 1 before it processes batch k's output, so that the CPU's
    scheduling hides under the GPU's work; a prefill batch's sampled tokens are handed to the detokenizer
    only in the scheduler's next round, after the following batch (the first decode) has been launched, and
    the client sees them about one decode iteration after the prefill: sgl-project/sglang PR #2067 (turning
    it on by default) notes the median TTFT rising "because we delayed the processing of the first batch in
    favor of launching the kernels for the next batch first" (its CI's bench_serving median TTFT limit went from
    80 to 86 ms), and PR #25772 (2026-05-19, closed unmerged) finds that without prefill-decode
    disaggregation the TTFT "incorrectly includes an additional decode latency", for a single request and
    for concurrent ones (screenshots; whether the client's clock or only the server's metric, the text does
    not say; the client-side rows below show it). The steady state's TTFT
    already ends with that iteration (`_admitted_ttft`: the prefill, then the iteration that samples the
    first token; ACCELMARK-0074, SGLang 0.5.6 on an A100 at one user: 32.5 ms, a ~20 ms prefill of 255 tokens
    and one 12.9 ms decode iteration); a wave's TTFT (`wave_ttft_s`, `wave_rank_ttft_s`) ended at its prefill.
    Under SGLang `wave_stagger_s` adds nothing: with this iteration on top, a first arrival prefilled alone
    would put the wave's median member three iterations out, and SGLang's closed loops of a few users
    measure two, as one user does (below); a plausible reason, not read in the sources, is that the idle
    scheduler's per-round self-check lets a burst of arrivals gather into one prefill batch. That choice is
    structural and the held-out rows below only check it. Checked, not fitted (nothing here is a factor):
    INFBENCHL4-0002/-0005 (SGLang 0.4.6 on an L4, 1 and 4 users) 118.6 and 119.3 ms, two ~58 ms
    iterations; A10GVS-0015/-0043/-0071 (an SGLang nightly of 2026-03 on an A10G, 1 user, a one-token
    prefill after the radix cache) 62-67 ms, two ~32 ms iterations, as at 2-8 users (57-74 ms). From 16
    users those runs rise further (A10GVS: 92-170 ms), as the same client's vLLM runs do: a per-request
    cost of the client or the front end, not modelled (`frontend_s` says what WMXL4's fit rows show of it).
    vLLM emits a prefill's first token with its own step (INFBENCHL4-0017, vLLM 0.8.5, one user: 69 ms
    against a 58 ms TPOT), so nothing is added for it.

    The batch that follows a prefill pass is not always a decode iteration: SGLang's scheduler is prefill-first
    (`sglang_prefill_first`), so while prompts wait (a wave or burst larger than one pass, or arrivals during the
    pass) the next batch is another prefill pass, and the first tokens of the pass before it come out only once
    that pass has been launched: `next_prefill_s`, with probability `p_prefill_next`, in place of the decode
    iteration (`sglang_consecutive_prefill_s` names the source)."""
    if not sglang_overlap(r):
        return 0.0
    p = min(1.0, max(0.0, p_prefill_next))
    dec = _iteration(r, max(1, n), 0.0)[0] if p < 1.0 else 0.0
    return p * next_prefill_s + (1.0 - p) * dec


def sglang_consecutive_prefill_s(r: ResolvedPlan, arrivals_per_s: float, pass_s: float, prompts: int,
                                 budget: int | None) -> tuple[float, float]:
    """(probability, seconds) that the batch after a prefill pass of `pass_s` is another prefill pass, and that
    pass's time, for Poisson arrivals at `arrivals_per_s` (`first_token_emission_s`).

    Under the overlap scheduler (SGLANG_OVERLAP_FROM) the scheduler launches batch k + 1 before it processes batch
    k's output, and that processing waits for batch k + 1's launch: sglang 0.4.2.post4
    `TpModelWorkerClient.resolve_batch_result` waits on batch k's `copy_done` and then on `self.launch_done`, the
    event the forward thread sets once `model_runner.forward` of the newest batch (k + 1) has returned
    (managers/tp_worker_overlap_thread.py, tp_worker.py `forward_batch_generation`); 0.4.0's and 0.5.6's
    `event_loop_overlap` keep the order (`run_batch` of the next batch, then the last one's `process_batch_result`).
    When both batches are prefills ("extend") the first tokens of batch k wait for a whole prefill's launch:
    sgl-project/sglang PR #11856 (merged, reviewed 2025-10-20..22) "if both last_batch and curr_batch are in extend
    mode ... last_batch may have to wait for a longer period, resulting in a longer TTFT", and added
    SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP, default off (read in the 0.5.6 wheel: environ.py `EnvBool(False)`),
    so every release keeps the wait; PR #26226 (2026-05-24, closed unmerged) measured 100 concurrent prompts at
    TTFT 3.97 s with it, 2.83 s without; issue #10514 (2025-09-16) found the wait on the next launch behind a 32 %
    higher mean TTFT than without the overlap scheduler (H20). The
    decode case (`first_token_emission_s`) is the same wait with a decode batch next. A pass is followed by
    another when a prompt arrived during it (probability 1 - exp(-arrivals x pass)); that pass holds the
    arrivals of one pass, at least one prompt and at most the budget's worth."""
    if arrivals_per_s <= 0 or pass_s <= 0:
        return 0.0, 0.0
    p = 1.0 - math.exp(-arrivals_per_s * pass_s)
    per_pass = max(1, budget // max(1, prompts)) if budget is not None else 10**9
    k = max(1, min(per_pass, math.ceil(arrivals_per_s * pass_s - 1e-9)))
    return p, prefill_pass(r, k, prompts).seconds


def sglang_wave_first_tokens(m: int, prompt: int, budget: int | None) -> list[tuple[int, bool]]:
    """For each member of a wave of `m` prompts prefilled in SGLang's passes of `budget` tokens (FCFS,
    `wave_ttft_s`): (the wave's tokens prefilled when its first token comes out, whether a decode iteration
    follows first). Under the overlap scheduler a pass's first tokens come out once the next batch has been
    launched (`sglang_consecutive_prefill_s`): the next pass of the wave, or for the last pass the first decode
    iteration. Without chunking (`budget` None) the wave is one pass."""
    return [sglang_first_token_at(i, m, prompt, budget) for i in range(1, m + 1)]


def sglang_first_token_at(k: int, m: int, prompt: int, budget: int | None) -> tuple[int, bool]:
    """`sglang_wave_first_tokens` for the wave's k-th member alone (1 <= k <= m)."""
    total = m * prompt
    done = total if budget is None else min(total, math.ceil(k * prompt / budget) * budget)
    if done >= total or budget is None:
        return total, True
    return min(total, done + budget), False


def wave_prompts_through(k: int, m: int, prompt: int, budget: int | None) -> int:
    """Prompts of a wave of `m` prefilled (wholly or in part) by the end of the chunked-prefill iteration that
    finishes the k-th one (FCFS, `budget` tokens per iteration; `wave_ttft_s`); without chunking all m."""
    if budget is None:
        return m
    done = math.ceil(k * prompt / budget) * budget
    return max(k, min(m, math.ceil(done / max(1, prompt))))


def wave_median_ttft_s(r: ResolvedPlan, users: int, n: int, budget: int | None, lam: float, own: float) -> float:
    """Median TTFT of a wave of `users` requests sent together when at most `n` < users run at once.

    The engine admits them first come, first served (vLLM's FCFS scheduler), `n` at a time; the figure is
    the median over requests (PLAN-FORMAT's `ttft_ms`), i.e. the TTFT of the request of rank users / 2, not
    a mean over everyone (a mean counts the users past the cap waiting a whole request duration, and the
    first n not at all: the distribution is two-humped). While that rank is within the first wave it waits
    for the prompts ahead of it: under chunked prefill its own first token comes after k = users / 2
    prompts' work, without chunking at the end of the first batch's prefill; past the first wave it waits
    for the first batch and then for k - n completions at the steady rate `lam` (`offline_backlog`'s fluid
    approximation), then its own prefill `own`. LDSINGH-0023 (512 users sending 512 requests at once to
    vLLM 0.23 on an RTX A6000, batch cap 256): median TTFT 1.04 s, where the mean over users gave 5.1 s."""
    return wave_rank_ttft_s(r, users, n, budget, lam, own, 0.5)


def wave_rank_ttft_s(r: ResolvedPlan, users: int, n: int, budget: int | None, lam: float, own: float,
                     q: float) -> float:
    """TTFT (less the front end) of the wave member at quantile `q` (0 < q <= 1) of a wave of `users`
    requests sent together, at most `n` running at once: rank k = q x users, priced as in
    `wave_median_ttft_s` (its q = 0.5). The members' TTFTs grow with their rank (FCFS), so this is the
    wave's quantile function."""
    prompt = prefill_tokens(r.workload)
    k = max(1, min(users, math.ceil(q * users - 1e-9)))
    if k > n:
        return prefill_pass(r, n, prompt).seconds + (k - n) / max(lam, 1e-9) + own
    return _with_serial(_wave_rank_gpu_s(r, k, n, budget, prompt), front_end_queue_s(r, k))


def _wave_rank_gpu_s(r: ResolvedPlan, k: int, n: int, budget: int | None, prompt: int) -> float:
    """`wave_rank_ttft_s`'s engine part for a rank `k` within the running cap `n`."""
    if sglang_overlap(r):
        # its first token waits for the next batch's launch: the wave's next pass, or after the last the first decode
        tokens, decode_next = sglang_first_token_at(k, n, prompt, budget)
        through = max(k, min(n, math.ceil(tokens / max(1, prompt))))
        return prefill_pass(r, through, prompt).seconds + (first_token_emission_s(r, n) if decode_next else 0.0)
    return prefill_pass(r, wave_prompts_through(k, n, prompt, budget), prompt).seconds + first_token_emission_s(r, n)


def mixed_median_ttft_s(r: ResolvedPlan, users: int, n: int, budget: int | None, lam: float, own: float,
                        wave_weight: float, steady_s: float) -> float:
    """Median TTFT (less the front end) over a run of which a share `wave_weight` of the requests arrive in
    the opening wave of `users` (`wave_rank_ttft_s`) and the rest into the steady state, where each waits
    `steady_s`.

    PLAN-FORMAT's `ttft_ms` is a median over the run's requests. The wave's members spread from the first
    prompt's prefill to the last one's (FCFS, under chunked prefill) while the steady requests sit near
    `steady_s`, so the run's median is that of the mixture, found from its distribution function
    F(t) = w F_wave(t) + (1 - w) [t >= steady_s]: the steady value when it straddles one half, else the
    wave member at quantile (1/2) / w (the median falls among the wave's early members) or
    (1/2 - (1 - w)) / w (among its late ones). A weighted mean of the two parts, as before, counts the
    wave's late members in full: LDSINGH-0017/-0020 (vLLM 0.23 on an RTX A6000, 128 and 256 users sending
    512 requests, wave shares 1/4 and 1/2) measured median TTFTs of 126 and 299 ms where that mean gave 159
    and 408 ms; the mixture's median, with the closed loop's iteration wait (`iteration_wait_s`), gives 115
    and 179 ms. The shortfall left at 256 users is the steady state's own (its iterations run 66 ms; the
    request waits ~4.4 of them where the model has ~2.6), not the mixture's."""
    w = min(1.0, max(0.0, wave_weight))

    def wave(q: float) -> float:
        return wave_rank_ttft_s(r, users, n, budget, lam, own, q)

    if w >= 1.0:
        return wave(0.5)
    # the wave's members at or below steady_s: F_wave(steady_s), by bisection on its quantile function
    lo, hi = 0.0, 1.0
    if wave(1.0) <= steady_s:
        below = 1.0
    elif wave(1.0 / max(1, users)) > steady_s:
        below = 0.0
    else:
        for _ in range(30):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if wave(mid) <= steady_s else (lo, mid)
        below = lo
    if w * below >= 0.5:
        return wave(0.5 / w)
    if w * below + (1.0 - w) >= 0.5:
        return steady_s
    return wave((0.5 - (1.0 - w)) / w)


def wave_tpot_extra_s(r: ResolvedPlan, m: int, budget: int | None) -> float:
    """Mean time per output token that a wave's own prefills add to its members' TPOT.

    Without chunked prefill the m prompts are prefilled as one batch before any first token, so the
    members then decode with no prefill in between: nothing. With chunked prefill (vLLM V1's scheduler
    puts the running requests' decode tokens first and fills the rest of the `budget` with waiting
    prompts, FCFS) the i-th member gets its first token after i prompts' work and then decodes inside
    the chunked iterations that prefill the other m - i prompts: its TPOT, (e2e - TTFT) / (O - 1) as
    `vllm bench serve` computes it, carries (m - i) / m of the wave's prefill, (m - 1) / (2m) of it on
    average. The vLLM blog's Arc Pro B60 table is consistent with it (VLLMARC-*: 2 x TTFT + (O - 1) x
    (TPOT - TTFT / O) equals users x O / throughput within 2 % on all six rows), though that table
    alone would also fit every first token coming at the wave's end (TTFT + (O - 1) x TPOT)."""
    if budget is None or m <= 1:
        return 0.0
    w = r.workload
    out = max(1, w.output_tokens)
    batch_s = prefill_pass(r, m, prefill_tokens(w)).seconds
    return batch_s * (m - 1) / (2 * m) / max(1, out - 1)


def chunked_burst_tpot_extra_s(r: ResolvedPlan, m: int, budget: int | None) -> float:
    """Time per output token that the other prompts' prefill chunks add to the MEDIAN member's TPOT in one
    offline burst of `m` requests that all run at once, under a scheduler whose decodes ride in the prefill
    chunks (`decodes_ride_in_prefill_chunks`: vLLM's chunked prefill, V1 and V0 with chunking on by default
    above a 32K max_model_len; LMDeploy's TurboMind; TGI 3).

    The scheduler fills each iteration with the running decodes first and waiting prompts' chunks up to
    `budget` tokens (vLLM V0 vllm/core/scheduler.py `_schedule_chunked_prefill`, V1 scheduler.py; Agrawal et
    al. 2024, Sarathi-Serve, OSDI '24, sec. 4), FCFS. Member i (of m) gets its first token once prompts 1..i are
    prefilled; its O - 1 later tokens each take one iteration, and every iteration still holding a chunk of
    the m - i prompts behind it costs that chunk's arithmetic (`fused_prefill_s_per_token`) on top of the decode.
    The chunks it sees are (m - i) P tokens in all but at most `budget` per iteration, so its extra per token is
    min(chunk_s, (m - i) P t_f / (O - 1)): uncapped its mean over the members is `wave_tpot_extra_s`, and once
    the prompts behind it outlast its own decode (long prompts, short outputs) EVERY one of its tokens waits a
    whole chunk, so its TPOT is the chunked pass, not a decode step. TPOT_i falls with i: the median is member
    (m + 1) / 2, with (m - 1) / 2 prompts behind it. Structure from the schedulers' source, no factor.
    Rows: DSTACK405B-0046..0055 (held out; vLLM 0.6.3 on 8x MI300X, Llama-3.1-405B bf16, 8-64 prompts of
    10,000 tokens at once, max_model_len 131,072 so V0 chunks at 512 tokens): median TPOT 391-626 ms, a
    512-token chunk of this build's ~1.2 ms/token prefill (single 10k prompt: TTFT 12.3 s); priced as a
    plain decode step (60-80 ms) before, 0.10-0.15x of the measured, now ~0.4x (that build's prefill is itself ~1.7x
    slower than priced: its TTFT rows). Fit rows through the same path (it sets nothing; checked on them): LHLMI300X's
    vLLM 0.6.3 405B sonnet bursts of 32-256 ~80-token prompts on 8x MI300X (512-token chunks; -0018 .. -0027,
    -0054 .. -0066, -0090 .. -0105) median |error| 37 % -> 15 %; dennislee22's vLLM 0.10 bursts of 100-500 x 1,024
    tokens on A100s (DLVLLM-*) 10 % -> 4 %; TPOT vllm hbm fit rows 17.1 % -> 15.0 % median."""
    w = r.workload
    if m <= 1 or not decodes_ride_in_prefill_chunks(r.engine or "", budget) or budget is None:
        return 0.0
    prompt, out = prefill_tokens(w), max(1, w.output_tokens)
    if out <= 1:
        return 0.0
    t_f = fused_prefill_s_per_token(prefill_pass(r, 1, prompt), prompt, budget)
    chunk_tokens = max(1, budget - m)  # the running decodes take their tokens of the budget first
    behind = (m - 1) / 2.0  # prompts behind the median member
    return min(chunk_tokens * t_f, behind * prompt * t_f / (out - 1))


def load_point(r: ResolvedPlan, *, users: int | None = None, rate: float | None = None,
               slots: int | None = None, cap: int | None = None, budget: int | None = None,
               wave_weight: float = 0.0, recompute_s_per_iter: float = 0.0, paced: bool = False,
               kv_tokens: int | None = None) -> LoadPoint:
    """Steady state of a closed loop of `users` (load = concurrency, or offline with users = requests)
    or of Poisson arrivals at `rate` requests/s. `recompute_s_per_iter`: re-prefilling preempted
    sequences, spread over a closed loop's iterations (`lockstep_recompute_s`; 0 where none are preempted).
    `kv_tokens`: vLLM's KV pool in tokens, where known (`lockstep_round_admits_all`).
    `slots`: sequences the KV pool holds (None: unknown);
    `cap`: the engine's batch cap; `budget`: the chunked-prefill token budget per iteration (None: none);
    `paced`: a closed loop whose later rounds arrive at the budget's pace (`chunk_paced_rounds`)."""
    w = r.workload
    prompt, out = prefill_tokens(w), max(1, w.output_tokens)
    alone = prefill_pass(r, 1, prompt)
    t_p = alone.seconds / prompt  # s per prompt token of a prefill pass of its own
    t_f = fused_prefill_s_per_token(alone, prompt, budget)  # its share inside a decode iteration
    limit = min(x for x in (cap, slots, 10**9) if x is not None)
    limit = max(1, limit)
    sg_first = sglang_prefill_first(r)
    if budget is not None and not sg_first:  # SGLang's budget caps its prefill passes, not its decodes
        limit = min(limit, chunked_decode_cap(budget, prompt, out))

    together = in_step(w, rate)

    v0_tokens = vllm_v0_whole_prompt_tokens(r) if budget is None else None

    # TensorRT-LLM's micro-batch scheduler takes every waiting context request that fits max_num_tokens into the
    # next iteration (tensorrt_llm/_torch/pyexecutor/scheduler.py `PyMicroBatchScheduler.schedule`, C++
    # microBatchScheduler.cpp), so a lock-step round's prompts share a pass, as in the wave's TTFT (`wave_ttft_s`),
    # not one pass each: a round of short prompts reads the weights (and, on the PyTorch backend, launches its eager
    # pass) once, not once per prompt. AZIR5070TI-0046 (64 users, 1-token prompts after the prefix cache) priced
    # 64 passes of ~19 ms per 256-token round. LMDeploy's early TurboMind is left as fitted (LMDEPLOY-*).
    lockstep_wave = (rate is None and wave_weight >= 1.0 and budget is None
                     and (r.engine or "").startswith("trt-llm"))

    def share(k: int) -> float:  # a prompt token's time in the iterations of k running sequences
        if sg_first:
            return separate_prefill_s_per_token(r, k, budget, together)
        if v0_tokens is not None:  # V0 without chunking: waiting prompts share a prefill pass
            return separate_prefill_s_per_token(r, k, v0_tokens, together)
        if lockstep_wave and k > 1:  # a lock-step round's prompts are prefilled as one batch (`wave_ttft_s`)
            return prefill_pass(r, k, prompt).seconds / (k * prompt)
        return t_f

    saturated = False
    capacity_rps: float | None = None
    if rate is None:
        if users is None or users <= 0:
            raise MlrigError("a closed-loop load needs users > 0")
        n = min(users, limit)
        t_f = share(n)
        step, bound = _iteration(r, n, t_f)
        step += recompute_s_per_iter
        lam = n / step / out  # requests/s completed (= arriving, closed loop)
    else:
        # Little's law: running = rate x request duration, solved by fixed-point iteration
        # (duration grows with the batch); capped at the limit.
        n = 1
        for _ in range(50):
            step, _b = _iteration(r, n, share(n))
            want = max(1, math.ceil(rate * (prompt * t_p + out * step)))
            if want >= limit:
                n = limit
                break
            if want == n:
                break
            n = want
        t_f = share(n)
        step, bound = _iteration(r, n, t_f)
        capacity = n / step / out
        saturated = n >= limit and rate > capacity
        if n < limit and limit < 10**9:  # what a full batch would complete: the most this engine serves
            full_step, _b = _iteration(r, limit, share(limit))
            capacity = limit / full_step / out
        capacity_rps = capacity if limit < 10**9 else None
        lam = min(rate, capacity)
        users = n
    throughput = lam * out
    # TTFT: the iteration wait, the prefill queue (M/D/1), the own prefill (chunked or whole), the slot wait,
    # the server front end.
    waiting, own, dec_only = _admitted_ttft(r, n, lam, step, t_p, t_f, budget,
                                            others=users - 1 if rate is None else n - 1, closed_loop=rate is None,
                                            together=together)
    if paced and rate is None and budget is not None:
        # the later rounds of a fixed-length loop arrive at the budget's pace, not as a Poisson trickle
        waiting, own = chunk_paced_ttft_s(r, n, users - 1, t_f, budget)
    dec_only += recompute_s_per_iter  # the preempted sequences' re-prefills stall the survivors' decodes
    request_s = own + out * step
    slot_wait = max(0, users - n) / n * request_s
    if rate is not None and limit < 10**9 and not saturated:
        # Poisson arrivals into at most `limit` slots: the full batch's stochastic wait (`median_slot_wait_s`)
        slot_wait += median_slot_wait_s(limit, rate, out * step, slot_service_cv2(w))
    queue = waiting + slot_wait
    if saturated:
        queue = math.inf
    front = frontend_s(r)
    ttft = queue + own + front
    # TPOT: a closed loop's user shares its iterations with the other n - 1 users' prompts, never its own
    # (its own prefill came before its first token); `step` carries n prompts' share because a cycle of the
    # loop (the throughput) holds all n. Poisson arrivals are independent of the request (PASTA), so the
    # n of Little's law arrive during it and `step` stands.
    tpot = step - _own_prompt_share_s(r, t_f) if rate is None else step
    ttft_mean: float | None = None
    if wave_weight > 0 and not saturated:
        # The share of requests that arrive in a synchronised wave (`wave_ttft_s`) rather than
        # into the steady state above; the wave's later members past the cap also wait for slots.
        # Once a wave's prompts are prefilled its members decode without prefills in between: their
        # TPOT is the decode-only iteration, plus, under chunked prefill, the share of the wave's
        # prefill that ran between their own tokens (`wave_tpot_extra_s`).
        # TTFT is the run's median over its requests (`mixed_median_ttft_s`), the mean apart.
        # the first arrival's prompt runs alone (`wave_stagger_s`); the others are prefilled together after it
        stagger = wave_stagger_s(r, n)
        wave_gpu = wave_first_token_s(r, n - 1 if stagger > 0 else n, budget, n) + stagger
        wave_mean = _with_serial(wave_gpu, front_end_queue_s(r, (n + 1) / 2)) + slot_wait + front
        mean = wave_weight * wave_mean + (1.0 - wave_weight) * ttft
        if (users > n and wave_weight >= 1.0 and (w.num_requests or 0) > users
                and lockstep_round_admits_all(kv_tokens, users, n, cap, prompt, out)):
            # A lock-step loop whose pool takes a whole round back at once (`lockstep_round_admits_all`): the
            # preempted come back first (the head of the queue) and the finished users' new prompts with them,
            # one wave of all `users` prompts plus the preempted ones' re-prefill, and nobody's first token
            # waits for a slot
            regrown_s = recompute_s_per_iter * out  # the round's re-prefill of its preempted (`lockstep_recompute_s`)
            stagger_all = wave_stagger_s(r, users)
            wave_all = (wave_first_token_s(r, users - 1 if stagger_all > 0 else users, budget, users)
                        + stagger_all + regrown_s)
            ttft = _with_serial(wave_all, front_end_queue_s(r, (users + 1) / 2)) + front
            ttft_mean = ttft
        elif users > n and wave_weight >= 1.0 and (w.num_requests or 0) > users:
            # A lock-step loop of more users than run at once, over several rounds: the n that ran end
            # together and their users' next requests join the queue behind the users - n still waiting (FCFS;
            # vLLM puts preempted requests back at its head: V0 `waiting.extendleft`, V1
            # `waiting.prepend_request`), so the queue never drains and a request waits (users - n) / n
            # request durations on average (the slot wait), then is prefilled in its round's wave. Only the
            # opening round's first n do not wait: the median request is one that does once N > 2 n.
            # DSTACKR1-0128 / -0131 (128 users, 500 requests of 3,200 + 3,200 / 6,400 tokens on a pool that
            # holds fewer at full length): median TTFT 226 / 1,273 s, where the opening wave's median member
            # (rank 64 of 128, within the first n) gave 30 / 24 s.
            ttft_mean = wave_mean
            ttft = wave_mean
        elif users > n or wave_weight < 1.0:
            ttft_mean = mean
            ttft = mixed_median_ttft_s(r, users, n, budget, lam, own, wave_weight, ttft - front) + front
        else:
            ttft = wave_mean  # the whole run is one wave within the cap: its median and mean nearly agree
        queue = max(0.0, ttft - own - front)
        tpot = wave_weight * (dec_only + wave_tpot_extra_s(r, n, budget)) + (1.0 - wave_weight) * tpot
    return LoadPoint(running=n, step_s=step, tpot_s=tpot, throughput_tok_s=throughput, requests_per_s=lam,
                     ttft_s=ttft, queue_s=queue, bound=bound, saturated=saturated, ttft_mean_s=ttft_mean,
                     capacity_rps=capacity_rps if rate is not None else None)


def _admitted_ttft(r: ResolvedPlan, n: int, lam: float, step: float, t_p: float, t_f: float,
                   budget: int | None, *, others: int, closed_loop: bool = False,
                   together: bool = False) -> tuple[float, float, float]:
    """TTFT terms of a request admitted at once into `n` running sequences (iterations of `step` s,
    prompts arriving at `lam` per s; `others` of them running when it arrives): (the wait, the own
    prefill with the iteration that samples the first token, the decode-only iteration). The wait is the
    iteration wait (`iteration_wait_s`) plus the median wait in the prefill queue (M/D/1,
    `median_prefill_wait_s`); under chunked prefill a prompt's tokens ride in decode
    iterations, its arithmetic only (`t_f`), in ceil(P / (budget - n)) chunks."""
    prompt = prefill_tokens(r.workload)
    service = prompt * t_f
    rho = min(0.95, lam * service)
    wait_prefill = median_prefill_wait_s(rho, service)
    dec_only, _ = _iteration(r, n, 0.0)
    if sglang_prefill_first(r):
        # SGLang: the prompt is prefilled in a pass of its own with the others that arrived meanwhile, and
        # the overlap scheduler hands its first token out after the next decode iteration
        k = sglang_prefill_batch(n, prompt, max(1, r.workload.output_tokens), budget, together)
        pass_s = prefill_pass(r, k, prompt).seconds
        # the next batch is another prefill pass when a prompt arrived during this one (`sglang_consecutive_prefill_s`)
        # (a closed loop's arrivals are the other users' completions; a prompt split into chunks is followed by the
        # prompts that arrived during its last chunk, the earlier ones joining that chunk's pass)
        arriving = lam * others / (others + 1) if closed_loop else lam
        last_chunk_s = pass_s * min(1.0, budget / (k * prompt)) if budget is not None else pass_s
        p_next, next_s = ((0.0, 0.0) if together
                          else sglang_consecutive_prefill_s(r, arriving, last_chunk_s, prompt, budget))
        own = pass_s + first_token_emission_s(r, n, next_s, p_next)
    elif budget is not None and budget > n:
        own = service + math.ceil(prompt / (budget - n)) * dec_only
    elif turbomind_loop_prefill(r, budget):
        # every prompt dequeued at the top of the loop is prefilled before the loop's one decode step samples
        # the first tokens: the request's first token waits for its co-arrivals' prompts too, not a FCFS queue
        wait_prefill = 0.0
        own = prompt * t_p * (1.0 + turbomind_co_arrivals(lam, step)) + dec_only
    else:
        own = prompt * t_p + dec_only  # the prefill pass, then the iteration that samples the first token
    return iteration_wait_s(r, step, others, closed_loop) + wait_prefill, own, dec_only


def turbomind_loop_prefill(r: ResolvedPlan, budget: int | None) -> bool:
    """Whether new requests are prefilled the way LMDeploy's TurboMind did before PR #775 (v0.1.0a1 and older,
    `engines.lmdeploy_unified_iterations` false; no budget then, `lmdeploy_iteration_budget`).

    Its scheduler loop (src/turbomind/models/llama/LlamaBatch.cc `InternalThreadEntry` at v0.1.0a1) takes, at
    the top of every loop, all the requests queued since the last one (`request_queue.dequeue` with
    `request_interval = 1`, up to the free slots), then `ContextDecode()` prefills every one of them (in
    sub-batches of at most `max_context_token_num` tokens, each a pass of its own) and only then `Generate()`
    runs the one decode step that samples all their first tokens, and `Finish()` streams them. So a request's
    first token waits for the prompts dequeued with it, whether they were queued before or after it: batch
    service, not the first-come-first-served prefill queue of `median_prefill_wait_s`."""
    from mlrig.estimators.engines import lmdeploy_pytorch_engine, lmdeploy_unified_iterations

    return (r.engine == "lmdeploy" and budget is None
            and not lmdeploy_pytorch_engine(r.workload.engine, r.workload.engine_version)
            and not lmdeploy_unified_iterations(r.workload.engine_version))


def turbomind_co_arrivals(lam_per_s: float, step_s: float) -> float:
    """Mean number of OTHER requests dequeued at the same TurboMind loop as a given request
    (`turbomind_loop_prefill`): the arrivals during one loop iteration of `step_s`, at `lam_per_s` requests/s.
    Poisson arrivals (and a closed loop's completions, which come from independent requests) seen from an
    arrival: the others in its batch are Poisson with the same mean lam x step (PASTA / the size-biased count
    less the request itself; Kleinrock 1975, "Queueing Systems" vol. 1 sec. 5.2). Nothing fitted: for the
    LMDeploy v0.1.0a1 ShareGPT runs (LMDEPLOY-0176..-0208) it is 0.26-1.1 prompts of ~250 tokens."""
    return max(0.0, lam_per_s * step_s)


# Most of the GPU's time that admitted prefills may take in `rate_run_point`'s fluid model (the decodes keep
# the rest); the prompts beyond it wait in its queue.
PREFILL_SHARE_MAX = 0.95


def separate_prefill_passes(r: ResolvedPlan, budget: int | None) -> bool:
    """Whether prefills run as passes of their own between the decode passes: vLLM without chunked prefill
    (V0's default scheduler, `_schedule_default`: while prompts wait it runs a prefill step of all that fit,
    and decodes only when none wait; Kwon et al. 2023 sec. 4.5). TensorRT-LLM's and LMDeploy's in-flight
    batching put context requests into the decode iteration itself, as chunked prefill does; LMDeploy
    before v0.1.0a2 ran them as passes of their own (`lmdeploy_iteration_budget`: no budget there), and so does
    TGI before 3.0 (`tgi_chunk_budget`: no budget there; `engines.tgi_chunked_prefill`). LMDeploy's PyTorch
    engine runs a prefill pass whenever prompts wait and fewer than half its batch cap run, else a decode pass
    (inputs_maker.py `do_prefill_default`, `engines.lmdeploy_pytorch_engine`): passes of their own too. So does
    MLC-LLM serve before its hybrid prefill (`engines.mlc_separate_prefill`: an engine step is one action, the
    waiting prompts' prefill first, as V0's)."""
    from mlrig.estimators.engines import lmdeploy_pytorch_engine, lmdeploy_unified_iterations

    w = r.workload
    old_turbomind = r.engine == "lmdeploy" and not lmdeploy_unified_iterations(w.engine_version)
    torch_engine = r.engine == "lmdeploy" and lmdeploy_pytorch_engine(w.engine, w.engine_version)
    old_mlc = r.engine == "mlc" and mlc_separate_prefill(w.engine_version)
    return budget is None and (r.engine in ("vllm", "tgi") or old_turbomind or torch_engine or old_mlc)


def whole_prompt_pass_cap(w: WorkloadSpec, prompt: int, limit: int) -> int:
    """Prompts one prefill pass takes where prompts are prefilled whole (no chunked prefill): vLLM V0's
    scheduler fills a prefill step with waiting prompts up to max_num_batched_tokens, which is
    max(max_model_len, 2048) when chunked prefill is off (V0 SchedulerConfig), and up to the batch cap.
    LMDeploy's PyTorch engine fills one up to max_prefill_token_num, 8,192 by default from v0.6 (4,096 to
    16,384 before: engines.lmdeploy_pytorch_max_prefill_tokens; paging/scheduler.py).

    Known gap, checked 2026-11-25 and left as it is: without the plan's max_model_len this takes the request's
    context, where vLLM's default max_model_len is the model's own (max_position_embeddings, as
    `vllm_v0_whole_prompt_tokens` reads it; vllm/config.py 0.5-0.10 SchedulerConfig: "max_num_batched_tokens =
    max(self.max_model_len, _DEFAULT_MAX_NUM_BATCHED_TOKENS)" with chunked prefill off, multi-step or not). With the
    engine's figure only DSTACKCMP's rate runs on MI300X move (fit; 405B FP8, no --max-model-len): a pass then takes
    up to 609 prompts, not 9, and `rate_run_point` prices a backlog's pass at that cap whatever waits (its demand
    q / dt): DSTACKCMP-0097's median TTFT at 32 req/s, 3.76 s measured, goes 4.2 -> 22.5 s. Bounding the pass by
    what waits (the queue and one decode block's arrivals, as `_schedule_prefills` takes them) still gives 7.7 s
    (+106 %; -0094 /
    -0103 / -0106 +21 / +188 / +116 %, the `TTFT vllm hbm` scope 18.1 / 50.2 % -> 18.8 / 51.0 %): at this model's
    prefill rate there (~6.2k tok/s, 29 req/s at full passes) 32 req/s outruns the passes, where the measured run
    kept nearly up. The 2,048-token cap's small passes happen to offset that; fixing one without the other is worse."""
    from mlrig.estimators.engines import lmdeploy_pytorch_engine, lmdeploy_pytorch_max_prefill_tokens

    if lmdeploy_pytorch_engine(w.engine, w.engine_version):
        tokens = w.max_num_batched_tokens or lmdeploy_pytorch_max_prefill_tokens(w.engine_version)
        return max(1, min(limit, tokens // max(1, prompt)))
    tokens = w.max_num_batched_tokens or max(w.max_model_len or w.context, 2048)
    return max(1, min(limit, tokens // max(1, prompt)))


def chained_prefill_prompts(rate: float, decode_block_s: float, pass_s: Callable[[float], float],
                            most: int) -> float:
    """Mean prompts per prefill pass where vLLM V0 chains its prefill passes (chunked prefill off): the
    smallest k >= 1 with k = rate x (T(k) + exp(-rate T(k)) x decode_block_s), T(k) = `pass_s(k)`; 1 where
    the passes do not chain (rate x T(1) plus the decode block's arrivals stay under one prompt), `most` where
    no k up to the pass cap keeps up.

    V0's default scheduler runs a prefill step whenever prompts wait and decodes only when none do
    (vllm/core/scheduler.py `Scheduler._schedule_default` at v0.7.3: "Don't schedule decodes if prefills are
    scheduled"), and the engine loop adds the requests that arrived during a step before the next schedule
    (vllm/engine/async_llm_engine.py `AsyncLLMEngine.engine_step`: `get_new_and_aborted_requests` first). So
    the prompts that arrive during a prefill pass make the next pass, and a chain of prefill passes ends only
    when none arrive during one (Poisson arrivals: probability exp(-rate T(k))); then one decode step (a block
    of `decode_block_s` under multi-step scheduling) runs, and the prompts that arrive during it start the
    next chain. Each pass then takes the prompts of one pass and of that occasional decode block, which is
    the fixed point above. Where the passes carry a fixed host time (efficiency.VLLM_V0_TP_PREFILL_HOST_LAYER_S
    under TP) the chain is what keeps V0 up with the arrivals: the passes grow until their GPU work, not
    their host time, sets the pace. The decodes get only the chain's breaks, exp(-rate T) decode blocks per
    pass: the decode share of the GPU's time is exp(-rate T) decode_block_s / (T + exp(-rate T)
    decode_block_s), which is what `rate_run_point`'s fluid share f = rate T(k) / k leaves at this k."""
    def g(k: float) -> float:
        t = pass_s(k)
        return rate * (t + math.exp(-rate * t) * decode_block_s)

    if g(1.0) <= 1.0:
        return 1.0
    if g(float(most)) >= most:
        return float(most)
    lo, hi = 1.0, float(most)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if g(mid) > mid:
            lo = mid
        else:
            hi = mid
    return hi


def chained_pass_ttft_s(rate: float, k: float, pass_s: Callable[[float], float],
                        elapsed_s: float | None = None) -> tuple[float, float]:
    """(mean wait for the running pass, mean own pass) of a Poisson arrival into vLLM V0's chained prefill passes
    (`chained_prefill_prompts`) of k prompts on average, T(k) = `pass_s(k)` long.

    A pass holds the prompts that arrived during the one before, so its length T' = T(K), K ~ Poisson(rate T)
    follows the previous one's: with T taken linear about k (slope b = T(k + 1) - T(k), a prompt's GPU work),
    the chain's stationary variance is Var T = b^2 rate m / (1 - (b rate)^2), m = T(k) (the variance of a
    first-order autoregression, Var T' = b^2 (rate m + rate^2 Var T)). An arrival falls in a pass with
    probability proportional to its length (the inspection paradox; Kleinrock 1975, "Queueing Systems" vol. 1
    sec. 5.2), of mean length E_sb = m + Var T / m, and waits half of it; its own pass then holds it and the
    rate x E_sb prompts that arrived during that pass: T(1 + rate E_sb). Near the GPU's prefill capacity
    (b rate -> 1) both grow without bound, as a queue's wait does. A discrete-event run of the same scheduler
    with the same pass times (scripts/v0_chain_sim.py: median TTFT without the hand-off step) gives 168 / 196 /
    76 ms for AccelMark's 25 req/s runs ACCELMARK-0094 / -0105 (TP 8) / -0054 (one GPU), where this wait, own
    pass and the front end give 181 / 215 / 80 ms: 5-10 % above, the means against the medians.
    `elapsed_s` (a run from an idle engine, `rate_run_point`: the time since it began): the chain started with
    no spread, and after j = elapsed / m passes the autoregression's variance is b^2 rate m (1 - (b rate)^2j) /
    (1 - (b rate)^2), the stationary one's share that j passes build (the same sum, cut at j terms). Near the
    prefill capacity (b rate -> 1) that is b^2 rate m j, finite, where the stationary variance grows without
    bound: a run of a few hundred requests never reaches it. With the stationary one the median TTFT of a
    300-request run on an RTX 4090 (ACCELMARKGD-0027's plan) rose to 1.13 s at 35.5 req/s and fell to 0.72 s at
    36, where the chain no longer keeps up and the fluid's backlog takes over. Nothing is fitted."""
    m = pass_s(k)
    slope = max(pass_s(k + 1.0) - m, 0.0)
    phi2 = (slope * rate) ** 2
    if elapsed_s is None:
        load2 = min(phi2, 0.99 * 0.99)
        var = slope * slope * rate * m / (1.0 - load2)
    else:
        passes = max(1.0, elapsed_s / max(m, 1e-12))
        built = passes if abs(1.0 - phi2) < 1e-9 else (1.0 - phi2 ** passes) / (1.0 - phi2)
        var = slope * slope * rate * m * min(built, 1.0 / max(1.0 - min(phi2, 0.99 * 0.99), 1e-12))
    sized = m + var / max(m, 1e-12)  # the mean length of the pass an arrival falls in
    return 0.5 * sized, pass_s(1.0 + rate * sized)


def v0_separate_pass_ttft_s(r: ResolvedPlan, rate: float, k: float, pass_s: Callable[[float], float], *,
                            prefill_share: float, most: int, decode_wait_s: float, decode_block_s: float,
                            decode_step_s: float, elapsed_s: float | None = None) -> tuple[float, float]:
    """(wait for the running step, own pass with the step that hands the first token out) of a Poisson arrival
    admitted at once where vLLM V0 runs its prefills as passes of their own (`separate_prefill_passes`), the GPU
    spending `prefill_share` of its time in passes of k prompts on average (`rate_run_point`'s f) and the rest in
    decode blocks of `decode_block_s`.

    V0's scheduler (vllm/core/scheduler.py `Scheduler._schedule_default`, v0.7.3) is called between steps and runs
    a prefill step whenever prompts wait and fit the budget and the KV pool, a decode step otherwise. A Poisson
    arrival sees the GPU in a prefill pass with probability `prefill_share` (Poisson arrivals see time averages,
    Wolff 1982) and waits out that pass's rest (`chained_pass_ttft_s`: half the length-biased pass), its own pass
    then holding it and the prompts that arrived during the running one; else it lands in a decode block, waits
    `decode_wait_s` (`iteration_wait_s`) and its pass holds it and the block's other arrivals, rate x block. Each
    own pass is at most `most` prompts (`whole_prompt_pass_cap`). Its first token is handed out in the next step
    (async output processing): another prefill pass where a prompt arrived during its own (1 - exp(-rate T),
    `v0_prefill_handoff_s`), else the decode step `decode_step_s`. `elapsed_s`: the time since an idle engine
    began the run (`chained_pass_ttft_s`).
    Before, an arrival was taken to find a decode block whenever the passes did not chain
    (`chained_prefill_prompts`) and a prefill pass whenever they did: the two sides met with a step where the
    chain formed, a median TTFT 20 % lower at 36 req/s than at 35 on an H100 (AccelMark's Llama-3-8B plan,
    ACCELMARK-0006), where the prefill share is 43 % on both sides. The share-weighted sum is continuous in the
    rate, and each side is the old one where its step is the only one the GPU runs. First principles; nothing
    fitted."""
    share = min(1.0, max(0.0, prefill_share))
    in_pass_wait, _own = chained_pass_ttft_s(rate, k, pass_s, elapsed_s)
    after_pass = pass_s(min(float(most), 1.0 + rate * 2.0 * in_pass_wait))  # the running pass's arrivals join
    after_block = pass_s(min(float(most), 1.0 + rate * decode_block_s))
    waiting = share * in_pass_wait + (1.0 - share) * decode_wait_s
    own_pass = share * after_pass + (1.0 - share) * after_block
    next_prefill = 1.0 - math.exp(-rate * own_pass)
    return waiting, own_pass + next_prefill * v0_prefill_handoff_s(r) + (1.0 - next_prefill) * decode_step_s


def v0_prefill_handoff_s(r: ResolvedPlan) -> float:
    """Time from the start of a vLLM V0 prefill step to the moment it hands out the tokens the step before
    sampled. V0's async output processing (on for single-sequence requests: vllm/core/scheduler.py
    `_allow_async_output_proc`, v0.7.3) queues a step's sampled tokens (vllm/engine/llm_engine.py
    `LLMEngine.step`: `ctx.append_output(..., is_async=True)`) and processes them in the next step's
    callback, which the model runner calls once the host has launched that step's forward and logits
    (vllm/worker/model_runner.py `ModelRunner.execute_model`: `model_input.async_callback()` after
    `model_executable(...)` and `compute_logits`). A prefill step runs eagerly, so that is the host's launch
    of every layer: the per-step and per-layer host times (efficiency.STEP_OVERHEAD_S, LAYER_OVERHEAD_S) and,
    under tensor parallelism, the eager prefill's host time per layer (efficiency.VLLM_V0_TP_PREFILL_HOST_LAYER_S),
    not the step's GPU work. Used where a chained prefill pass follows the one that sampled a first token
    (`rate_run_point`); the decode iteration `_admitted_ttft` counts for it is the hand-off otherwise."""
    from mlrig.estimators.performance import layer_overhead_s, vllm_v0_prefill_host_layer_s

    engine, hw = r.engine or "vllm", r.hardware
    per_layer = layer_overhead_s(engine, r.gpu) + vllm_v0_prefill_host_layer_s(
        engine, r.workload.engine_version, hw.tensor_parallel, r.gpu.vendor)
    return eff.STEP_OVERHEAD_S.get(engine, 0.0) + r.arch.num_layers * per_layer


class _Followed:
    """One request followed through `rate_run_point`'s run: its rank among the arrivals (FCFS), and the
    times (s from the run's start) it arrives, starts decoding (its first token) and ends, None until
    reached; its queue wait and TTFT (s) and the output tokens it has had so far."""

    __slots__ = ("arrive", "end", "queue", "rank", "start", "tokens", "ttft")

    def __init__(self, rank: float) -> None:
        self.rank = rank
        self.arrive: float | None = None
        self.start: float | None = None
        self.end: float | None = None
        self.queue: float | None = None
        self.ttft: float | None = None
        self.tokens = 0.0


def vllm_kv_admission(r: ResolvedPlan, kv_tokens: int | None) -> VllmKvAdmission | None:
    """vLLM's admission by KV blocks for `rate_run_point` (`kv_limit.VllmKvAdmission`: a waiting prompt is
    admitted while its blocks are free, V0 less the 1 % watermark), None for other engines or an unknown pool.
    Each running sequence's output held at the steady state is `running_output_tokens`' (length-biased), so that
    once the sequences have grown the pool holds what `running_slots` counts, less the block rounding and V0's
    watermark.

    Varied output lengths only (`lengths = "varied"`, and `"uniform"`, whose spread lengths also end one by one):
    the fluid lets completions leave at the running sequences' mean age, right for exponential (memoryless)
    lengths. Fixed lengths end at O tokens each, so a
    burst's sequences grow together to prompt + O before any ends (the lock-step case, `lockstep_pool`), which
    an age-blind fluid cannot follow: with the held output capped at O / 2 it let a faster run of the same
    requests admit more and report a lower median TTFT (tests/test_serving_overload.py). There the steady
    batch stays the admission limit, as before."""
    from mlrig.estimators.engines import vllm_v1

    w = r.workload
    if r.engine != "vllm" or not kv_tokens or w.output_tokens <= 0 or w.lengths == "fixed":
        return None
    held = running_output_tokens(w)
    if held is None:  # every output reaches the client's cap: fixed lengths
        return None
    return VllmKvAdmission(pool_tokens=vllm_admission_pool_tokens(int(kv_tokens), vllm_v1(w.engine_version)),
                           prompt_tokens=max(1, w.prompt_tokens), held_cap=held)


def kv_admission_top(r: ResolvedPlan, cap: int | None, budget: int | None) -> int:
    """The most sequences that may run at once where vLLM admits by KV blocks (`vllm_kv_admission`): the batch cap
    (max_num_seqs) and, under chunked prefill, `chunked_decode_cap`; the pool's own bound is the admission's."""
    w = r.workload
    top = cap if cap is not None else 10**9
    if budget is not None:
        top = min(top, chunked_decode_cap(budget, prefill_tokens(w), max(1, w.output_tokens)))
    return max(1, top)


# Time steps of `rate_run_point`'s fluid model: about this many per request duration, and never more than
# RATE_RUN_MAX_STEPS in all (a very long run then takes coarser steps).
RATE_RUN_STEPS_PER_DURATION = 10
RATE_RUN_MAX_STEPS = 5_000
# Under vLLM's KV admission (`vllm_kv_admission`) the admission limit moves as the running sequences grow, one
# token per decode iteration: from pool // prompt-blocks fresh prompts to the steady batch over one request's
# duration. A step then spans at most RATE_RUN_KV_STEP_ITERATIONS decode iterations of the full batch (a quarter of
# a 16-token KV block), and a run at most RATE_RUN_KV_MAX_STEPS steps. With ten steps per duration (~35 decode
# iterations, 3 s on an L4) each step admitted its arrivals against the limit of the step's start and preempted
# the excess at its end, so how many fresh prompts the first fill took, and whether the median request was among
# them, depended on where the steps fell: and since the step is a tenth of min(duration, N / rate), on the rate.
# The same 300 requests on an L4 (Llama-3-8B, vLLM 0.7.3, 255 + 343 tokens, varied) then gave median TTFTs of
# 5.1 / 4.9 / 3.6 / 2.4 / 3.2 / 22 s at 6 / 8 / 10 / 15 / 25 / 50 req/s; at 4 iterations a step they are
# 9.8 / 13.4 / 15.2 / 17.6 / 19.8 / 22.8 s, within 2.5 % of a 1-iteration step (V1: 5 %) from 4 req/s up
# (tests/test_vllm_kv_admission.py).
RATE_RUN_KV_STEP_ITERATIONS = 4
RATE_RUN_KV_MAX_STEPS = 20_000


class CappedCompletions:
    """When a rate run's running requests end, for varied output lengths cut at the client's max_tokens cap C
    (`lengths = "varied"` with `max_output_tokens`): min(Exp(mu), C) tokens (`capped_exponential_scale`). A request
    that has decoded x < C tokens ends at the next with probability 1 / mu (the exponential is memoryless), and one
    that reaches C ends there. So the completions are n / (tpot x mu) from the running ones plus the cohorts that
    reach C, each admitted C tokens earlier and e^(-C / mu) of it still running; in steady state (admissions a,
    n = a x O x tpot, O = mu (1 - e^(-C / mu))) that is a (1 - e^(-C / mu)) + a e^(-C / mu) = a, the fluid's
    n / (tpot x O). They differ while the batch is young: after an idle engine fills in a burst, none of its
    requests is near C and they end at 1 / mu, not 1 / O, per token (AccelMark's suite, O 343 and C 512: mu 593,
    1.7x fewer early completions than n / (tpot x O) gives). ACCELMARK-0044 (fit: vLLM 0.20 on an A100 80GB,
    300 ShareGPT requests at 100 req/s into 128 slots) measured a median TTFT of 1.71 s, the wait for the first
    completions of a batch of young requests. First principles (renewal theory, Cox 1962 ch. 1); nothing fitted.
    Uncapped varied lengths (mu = O) and fixed lengths keep the fluid's single rate."""

    def __init__(self, mu_tokens: float, cap_tokens: int) -> None:
        self.per_token = mu_tokens  # tokens per completion of a running request below the cap: the hazard's mean
        self.cap = float(cap_tokens)
        self.survive = math.exp(-cap_tokens / mu_tokens)  # share of a cohort that reaches the cap
        self.clock = 0.0  # tokens each running sequence has decoded since the run began
        self.cohorts: deque[tuple[float, float]] = deque()  # (clock at admission, requests admitted)

    @classmethod
    def of(cls, w: WorkloadSpec) -> CappedCompletions | None:
        if w.lengths != "varied" or w.max_output_tokens is None or w.output_tokens <= 1:
            return None
        mu = capped_exponential_scale(float(w.output_tokens), w.max_output_tokens)
        if math.isinf(mu) or mu <= w.output_tokens:
            return None
        return cls(mu, w.max_output_tokens)

    def admit(self, requests: float) -> None:
        if requests > 0.0:
            self.cohorts.append((self.clock, requests))

    def crossing(self, tokens: float) -> float:
        """Advance the clock by `tokens` decode iterations; the requests that reach the cap meanwhile."""
        self.clock += tokens
        ended = 0.0
        while self.cohorts and self.cohorts[0][0] + self.cap <= self.clock:
            ended += self.cohorts.popleft()[1] * self.survive
        return ended


def rate_run_point(r: ResolvedPlan, rate: float, n_requests: int, *, slots: int | None = None,
                   cap: int | None = None, budget: int | None = None,
                   kv_tokens: int | None = None) -> LoadPoint:
    """A finite Poisson-rate run (`vllm bench serve --request-rate R --num-prompts N`): N requests arrive
    at `rate` over T = N / rate seconds, starting from an idle engine; the figures are those of the
    median request (the one arriving at T / 2) and the whole run's throughput (N x O / the time the
    last request ends: the benchmark's output tokens over its duration).

    A fluid model of the engine (the deterministic limit of the queue, Kleinrock 1976, "Queueing
    Systems" vol. 2 ch. 2, "the fluid approximation"; Newell 1982, "Applications of Queueing Theory"
    ch. 2-3 for a queue whose arrival rate exceeds its service rate over a finite period): `n` running
    sequences and `q` waiting ones, with
    - admissions: continuous-batching schedulers admit a waiting request as soon as the batch cap and
      the KV pool allow (vLLM's scheduler takes waiting requests after the running ones each step, V0
      running prefills first; Kwon et al. 2023 sec. 4.5; LMDeploy's and TensorRT-LLM's in-flight
      batching likewise), so below the limit every arrival joins the batch at once and q stays 0;
    - completions: each iteration decodes one token of every running request, and the prompts admitted
      per second take `rate x P x t` of the GPU's time (t: a prompt token's cost, `load_point`'s), so
      c = n (1 - a P t) / (t_dec(n) O) requests/s, and a request's TPOT is t_dec(n) / (1 - a P t);
    - the prompts are admitted no faster than the GPU prefills them: a <= PREFILL_SHARE_MAX / (P t), the rest
      wait in the queue (FCFS) and that wait replaces the prefill queue's random one (M/D/1) of
      `_admitted_ttft`. Where prefills are passes of their own (vLLM V0, `separate_prefill_passes`) the
      prompts that arrived during a decode pass are prefilled together in the next one, up to
      `whole_prompt_pass_cap`, so t is a pass of k prompts per prompt token, k the decode block's arrivals given at
      least one (x / (1 - exp(-x)), x = demand x t_dec; the weights read once per pass, not once per prompt), a
      backlog goes through in full passes, and an arrival waits for the running step, a decode block or a prefill
      pass by the GPU's time share (`v0_separate_pass_ttft_s`), rather than for the TPOT that spans both.
      AccelMark's V0 runs at 100 req/s of 255-token prompts (ACCELMARK-0008, -0032, -0056, -0068) show both
      sides: on an H100 the passes keep up (p50 TTFT 63 ms; 344 ms when every prompt was priced as a pass of its
      own, which put the GPU at 95 % prefill), on A100 / A800 cards they do not, and the median request waits for the
      backlog (1.3-2.0 s measured; 0.55 s when every arrival was admitted at once). The prompts that arrive
      during a prefill pass make the next one, before any decode (`chained_prefill_prompts`): where at least
      one arrives per pass the passes chain, k is the chain's fixed point, the decodes get only its breaks
      (the GPU share f may then pass PREFILL_SHARE_MAX: the chain keeps up by construction), and an arrival
      that lands in a prefill pass waits for it and rides in the next (`chained_pass_ttft_s`), one that lands in a
      decode break as above (`v0_separate_pass_ttft_s`; no M/D/1 prefill queue: a pass takes all that wait).
      At TP 8, where a pass of one prompt is ~60 ms of mostly host time
      (efficiency.VLLM_V0_TP_PREFILL_HOST_LAYER_S), that is what keeps V0 up with 25 req/s: AccelMark's
      Llama-3-70B runs on 8x A100 40GB / A800 (ACCELMARK-0094 / -0105, fit) measured 303 / 308 ms median TTFT,
      2.5 / 3.9x that with one prompt per pass (the queue grew over the run), 0.76 / 0.87x with the chain and
      the first token handed out early in the next pass (`v0_prefill_handoff_s`); on one GPU at 25 req/s
      (ACCELMARK-0030 / -0054 / -0066, fit) 0.89 / 1.06 / 1.03 (0.82 / 1.05 / 0.95 before the chain, 0.85 /
      1.01 / 0.98 before the time-share wait);
    - dn/dt = a - c, dq/dt = arrivals - a; at the limit a = c and c = n / (t_dec(n) O + n P t), solved
      together; FCFS, so a request of rank k is admitted when the admissions so far reach k (its wait is
      the queue ahead of it at the full batch's completion rate), and the run cannot end before N requests
      at that rate (the fluid's completions, n / duration, run ahead of fixed-length requests' as a
      batch drains). With varied output lengths (`lengths = "varied"`) the run ends when the longest of
      the requests still running when the last one starts ends, not O tokens after the last one's first:
      their drain (`varied_drain_s`, exponential lengths, as `varied_offline_throughput` takes them; being
      memoryless, what the running requests have left is exponential too). dstack's 405B FP8 runs of 1,000
      ShareGPT requests (DSTACKCMP-0075/-0078/-0093/-0096/-0102/-0105, fit: 16 and 32 req/s on 8x H100,
      8x and 4x MI300X) lasted 98-174 s for arrivals over 31-63 s; without the drain their output tok/s
      came out 34-63 % high, with it 4-23 %. Nothing is fitted.
    In steady state this is `load_point`'s Little's-law batch (n = rate x duration). What it adds is
    time: below capacity n approaches that batch with a time constant of about one request duration,
    1 / (1 - rho) longer near capacity, so a run of a few hundred seconds at 98 % load never reaches the
    steady batch that `load_point` finds (it would take ~20 durations); above capacity the batch grows
    to the limit (TPOT rising while TTFT stays short, as the V0 scheduler admits prefills first) and
    then the queue grows at rate - c, so the median request waits q(T / 2) / c: a finite TTFT that
    grows with N, where `load_point` has none. Near capacity the median's wait is the queue's fluctuation more
    than its mean: the Poisson arrivals' reflected-Brownian queue about the fluid's (`median_slot_wait_s`) is
    added to the fluid's wait, so the TTFT rises continuously through rho = 1 (the larger of the two, taken
    before, fell just past capacity and then jumped). `capacity_rps` is the most requests/s the run can be
    served at: a full batch's completions (no more prompts than the GPU prefills), or, for a run that fits in
    one batch, the prefills alone (`overloaded`, `overload_note`, `overload_ttft_band`).
    Rows (held out, checked, not fitted: nothing here is
    fitted): zhjunqin's RTX 3090 runs (ZHJUNQIN-*, `benchmark_serving.py`, 1,000 ShareGPT prompts at
    5 and 8 req/s): vLLM 0.4.1 at 8 req/s median TTFT 24.9 s, TensorRT-LLM 37.6 s, where
    (rate - capacity) x (T / 2) / capacity with the capacity they measured there (986 / 200 and 816 / 169
    req/s) gives 39 and 41 s (the model's own capacity for them is higher, so its TTFTs are lower); at 5
    req/s, ~98 % of vLLM's capacity, the median TPOT was 83 ms where the steady state's batch gives 121 ms
    (this model: 94 ms with the GEMM rates of that time); the measured output throughput is N x O over
    arrivals plus the last request's duration (207 tok/s at 1 req/s for 100 x 218 tokens).

    `kv_tokens` (vLLM, its KV pool): admissions are capped by the prompt's KV blocks, not by the pool's steady
    running batch (`slots`): the batch that follows an idle engine or a lull first grows past `slots` and
    the growth then preempts the newest, who wait again at the head of the queue (`vllm_kv_admission`,
    `kv_limit.VllmKvAdmission`). The capacity (`c_full`) stays the steady batch's. That limit moves with every
    decode iteration, so the fluid then takes steps of a few iterations (`RATE_RUN_KV_STEP_ITERATIONS`)."""
    w = r.workload
    prompt, out = prefill_tokens(w), max(1, w.output_tokens)
    alone = prefill_pass(r, 1, prompt)
    t_p = alone.seconds / prompt
    t_f = fused_prefill_s_per_token(alone, prompt, budget)
    limit = max(1, min(x for x in (cap, slots, 10**9) if x is not None))
    sg_first = sglang_prefill_first(r)
    if budget is not None and not sg_first:
        limit = min(limit, chunked_decode_cap(budget, prompt, out))
    capped = cap is not None or slots is not None or budget is not None
    kv_admit = vllm_kv_admission(r, kv_tokens)
    # the most that may run at once: the steady limit, or under KV admission the cap alone (`vllm_kv_admission`)
    top = limit if kv_admit is None else max(limit, kv_admission_top(r, cap, budget))
    cv2 = slot_service_cv2(w)
    dec_cache: dict[int, float] = {}
    share_cache: dict[int, float] = {}

    def share(k: int) -> float:  # a prompt token's time at k running (`load_point`'s)
        k = max(1, min(top, k))
        if not sg_first:
            return t_f
        if k not in share_cache:
            share_cache[k] = separate_prefill_s_per_token(r, k, budget)
        return share_cache[k]

    def dec(k: int) -> float:
        k = max(1, min(top, k))
        if k not in dec_cache:
            dec_cache[k] = _iteration(r, k, 0.0)[0]
        return dec_cache[k]

    # dec_at(x), linear between the whole batch sizes around x (x >= 1): dec(lo) + (x - lo) (dec(lo + 1) -
    # dec(lo)), each segment's (dec(lo), dec(lo + 1) - dec(lo)) worked out once; the run steps through the
    # same few batch sizes thousands of times
    segments: dict[int, tuple[float, float]] = {}

    def segment(lo: int) -> tuple[float, float]:
        low = dec(lo)
        seg = segments[lo] = (low, dec(lo + 1) - low)
        return seg

    pass_cache: dict[int, float] = {}

    def pass_s_per_token(k: int) -> float:  # a prefill pass of k waiting prompts, per prompt token
        if k not in pass_cache:
            pass_cache[k] = prefill_pass(r, k, prompt).seconds / (k * prompt)
        return pass_cache[k]

    def pass_s(k: float) -> float:  # a prefill pass of k prompts (a mean k: linear between whole counts)
        lo = max(1, math.floor(k))
        t_lo = pass_s_per_token(lo) * lo * prompt
        if k <= lo:
            return t_lo
        return t_lo + (k - lo) * (pass_s_per_token(lo + 1) * (lo + 1) * prompt - t_lo)

    most = whole_prompt_pass_cap(w, prompt, limit)
    separate = separate_prefill_passes(r, budget)
    block = scheduler_block_steps(r)  # decode iterations between two scheduler calls (vLLM V0 multi-step)
    chain_cache: dict[tuple[float, float], float] = {}

    def admitted_cost(want: float, d: float) -> tuple[float, float, bool]:
        """(s per prompt token of the prefills admitted at demand `want` per s, prompts per prefill pass, whether
        the passes chain: `chained_prefill_prompts`)."""
        if sg_first:
            # SGLang's pass takes the prompts that arrived during the last decode pass (`sglang_rate_pass`)
            k = sglang_rate_pass(want, d, prompt, budget, limit)
            return pass_s_per_token(k), k, False
        if not separate:
            return t_f, 1, False
        arrived = want * d * block  # the prompts that arrived while the running decode block ran
        if arrived >= most:
            return pass_s_per_token(most), most, False
        key = (round(want, 2), round(d * block, 4))
        chained = chain_cache.get(key)
        if chained is None:
            chained = chain_cache[key] = chained_prefill_prompts(want, key[1], pass_s, most)
        # after a decode block the pass holds the block's arrivals, at least one: a Poisson count given >= 1,
        # arrived / (1 - exp(-arrived)) on average (1 as the rate falls), continuous where the chain takes over
        k_block = arrived / -math.expm1(-arrived) if arrived > 1e-9 else 1.0
        if chained > k_block:
            return pass_s(chained) / (chained * prompt), chained, chained < most
        return pass_s(k_block) / (k_block * prompt), k_block, False

    steady = load_point(r, rate=rate, slots=slots, cap=cap, budget=budget)
    horizon = n_requests / rate
    duration = prompt * t_p + out * steady.step_s  # one request at the steady state
    # a backlog is prefilled in full passes (vLLM V0) or in SGLang's passes at a full batch
    t_full = share(limit) if sg_first else admitted_cost(math.inf, dec(limit))[0]
    c_full = limit / (dec(limit) * out + limit * prompt * t_full)  # completions/s of a full batch: the capacity
    # The most requests/s this run can be served at (`LoadPoint.capacity_rps`): a full batch's completions, and no
    # more prompts than the GPU prefills (PREFILL_SHARE_MAX of its time); a run that fits in one batch (N <= the
    # limit) never fills it, so only the prefills can fall behind its arrivals.
    prefill_rps = PREFILL_SHARE_MAX / (prompt * t_full)
    capacity = min(c_full, prefill_rps) if n_requests > limit else prefill_rps
    total = max(horizon, n_requests / max(c_full, 1e-9)) + 2.0 * duration
    dt = min(duration, horizon) / RATE_RUN_STEPS_PER_DURATION
    max_steps = RATE_RUN_MAX_STEPS
    if kv_admit is not None:
        # under KV admission the admission limit moves as the running sequences grow, one token per decode
        # iteration: a step spans at most RATE_RUN_KV_STEP_ITERATIONS of the full batch's
        dt = min(dt, RATE_RUN_KV_STEP_ITERATIONS * dec(limit))
        max_steps = RATE_RUN_KV_MAX_STEPS
    dt = max(dt, total / max_steps)
    n = q = arrived = admitted = 0.0
    t = 0.0
    # the median request (rank N / 2) and the last one (rank N), followed through the run: FCFS, a request
    # is admitted when the admissions so far reach its rank
    median, last = _Followed(max(1.0, n_requests / 2.0)), _Followed(float(n_requests))
    followed = (median, last)
    median_state: tuple[float, float, float] | None = None
    running_at_last = 1.0  # sequences running when the last request got its first token
    # The loop runs up to 10,000 steps per plan, so its two-argument min / max are written as the
    # comparisons they make (min(a, b) is b if b < a else a; max(a, b) is b if b > a else a): the same
    # values, without a call each.
    t_f_fixed = not sg_first  # share() is t_f whatever the batch
    limit_f = float(limit)
    first_fill: float | None = None  # new requests admitted before the first preemption (KV admission)
    # varied outputs cut at the client's cap C: the running requests end at the exponential's hazard 1 / mu per
    # token, and the cohorts that reach C tokens end all at once (`capped_completions`)
    cap_done = CappedCompletions.of(w)
    tpot_prev = steady.step_s
    for _ in range(max_steps * 2):
        if arrived < n_requests - 1e-9:
            arrivals = (n_requests - arrived) / dt
            arrivals = arrivals if arrivals < rate else rate
        else:
            arrivals = 0.0
        x = 1.0 if n < 1.0 else n
        lo = math.floor(x)
        seg = segments.get(lo) or segment(lo)
        d = seg[0] + (x - lo) * seg[1]
        if not t_f_fixed:
            t_f = share(round(n))
        # the running sequences up to which a prompt is admitted: the steady limit, or the KV blocks' (vLLM)
        limit_now = limit_f if kv_admit is None else min(float(top), kv_admit.limit())
        back_q = 0.0 if kv_admit is None else kv_admit.preempted
        want = arrivals + (q + back_q) / dt  # what the scheduler would admit: the arrivals and the queue
        chain = False
        if separate or sg_first:
            t_a, k_pass, chain = admitted_cost(want, d)
        else:
            t_a, k_pass = t_f, 1
        # the prompts cannot be admitted faster than the GPU prefills them (PREFILL_SHARE_MAX of its time):
        # the rest wait in the queue. Chained V0 passes (`chained_prefill_prompts`) keep up by construction and
        # leave the decodes only the chain's breaks, which may be less than 1 - PREFILL_SHARE_MAX.
        share_max = PREFILL_SHARE_MAX
        if chain and want * prompt * t_a < 1.0:
            share_max = max(PREFILL_SHARE_MAX, want * prompt * t_a)
        most_admitted = share_max / (prompt * t_a)
        want = most_admitted if most_admitted < want else want
        f = want * prompt * t_a  # share of the GPU's time the admitted prompts take
        f = f if f < share_max else share_max
        if cap_done is not None:
            per_token = cap_done.per_token
            cap_c = cap_done.crossing(dt / tpot_prev) / dt
        else:
            per_token, cap_c = out, 0.0
        c = n * (1.0 - f) / (d * per_token) + cap_c
        a = want
        free = (limit_now - n if limit_now - n > 0.0 else 0.0) / dt  # admissions that fill the batch to its limit
        if want > free + c:
            # limited by room: a = free + c (admissions replace completions), with c = n (1 - a P t) / (t_dec O)
            # solved together: c = n (1 - free P t) / (t_dec O + n P t); at the limit n / (t_dec O + n P t)
            f = free * prompt * t_a
            f = f if f < share_max else share_max
            c = (n * (1.0 - f) + cap_c * d * per_token) / (d * per_token + n * prompt * t_a)
            c = c if c > 0.0 else 0.0
            a = free + c
            f = a * prompt * t_a
            f = f if f < share_max else share_max
        tpot = d / (1.0 - f)
        tpot_prev = tpot
        if cap_done is not None:
            cap_done.admit(a * dt)
        # admissions of new requests: preempted ones come back first (`VllmKvAdmission.readmitted`)
        a_new = a if kv_admit is None else a - kv_admit.readmitted(a * dt) / dt
        for tag in followed:
            k = tag.rank
            if tag.arrive is None and arrived + arrivals * dt >= k - 1e-9:
                tag.arrive = t + max(0.0, k - arrived) / max(arrivals, 1e-12)
            if tag.arrive is not None and tag.start is None and admitted + a_new * dt >= k - 1e-9:
                t_admit = max(tag.arrive, t + max(0.0, k - admitted) / max(a_new, 1e-12))
                running = max(1, min(top, round(n)))
                # Without chunked prefill a decode pass and the prefill passes alternate (vLLM V0's
                # prefill-first scheduler): an arrival waits for the running pass, not for the whole time
                # between two decode tokens that `tpot` spans; its prompt rides in a pass of k_pass prompts.
                step_w = d if separate else tpot
                waiting, own, _ = _admitted_ttft(r, running, max(min(a, rate), 1e-9), step_w,
                                                 t_p, t_a, budget, others=round(n))
                if separate:
                    # V0's passes: the running step (a prefill pass or a decode block, as the GPU's time is
                    # shared), its own pass, then the step that hands the first token out (`v0_separate_pass_ttft_s`)
                    waiting, own = v0_separate_pass_ttft_s(
                        r, max(min(a, rate), 1e-9), k_pass, pass_s, prefill_share=f, most=most,
                        decode_wait_s=iteration_wait_s(r, d, round(n)), decode_block_s=d * block,
                        decode_step_s=own - prompt * t_p, elapsed_s=tag.arrive)
                elif sg_first:
                    # its own pass is the one it was admitted in, of k_pass prompts (`sglang_rate_pass`)
                    sg_pass_s = prompt * k_pass * t_a
                    if q > 0.5:  # prompts wait: the next batch is a prefill pass of the queue
                        p_next, next_s = 1.0, sg_pass_s
                    else:
                        p_next, next_s = sglang_consecutive_prefill_s(r, arrivals, sg_pass_s, prompt, budget)
                    own = sg_pass_s + first_token_emission_s(r, running, next_s, p_next)
                slot = 0.0
                if capped:
                    # the slot queue's fluctuation about the fluid's (`median_slot_wait_s`): the Erlang C chance
                    # that the batch the run holds now is full, then the reflected-Brownian queue of Poisson
                    # arrivals against a full batch's completions, less the mean growth the fluid already has
                    # (under KV admission the batch is as full as its admissions are: n of limit_now)
                    held = n if kv_admit is None else n * limit / max(1.0, limit_now)
                    slot = median_slot_wait_s(limit, rate, out * tpot, cv2, elapsed_s=tag.arrive, occupancy=held)
                if t_admit > tag.arrive + 1e-9:
                    # held in the fluid queue: that wait replaces the prefill queue's random one (M/D/1)
                    waiting = iteration_wait_s(r, step_w, round(n))
                tag.queue = max(0.0, t_admit - tag.arrive) + slot + waiting
                tag.ttft = tag.queue + own + frontend_s(r)
                tag.start = tag.arrive + tag.ttft
                tag.tokens = 0.0
                if tag is median:
                    median_state = (n, tpot, q)
                if tag is last:
                    running_at_last = n + 1.0 if n + 1.0 < limit_now else limit_now
            if tag.start is not None and tag.end is None and t + dt > tag.start:
                step_in = t + dt - tag.start
                tag.tokens += (step_in if step_in < dt else dt) / tpot
                if tag.tokens >= out:
                    tag.end = t + dt - (tag.tokens - out) * tpot
        if last.end is not None and median.end is not None:
            break
        if kv_admit is None:
            n_next = n + (a - c) * dt
            n_next = n_next if n_next > 0.0 else 0.0
            n = n_next if n_next < limit_f else limit_f
        else:  # the grown sequences that no longer fit are preempted (`VllmKvAdmission.step`)
            n = kv_admit.step(n, a * dt, c * dt, dt / tpot, float(top))
            if first_fill is None and kv_admit.preempted > 0.0:
                first_fill = admitted + a_new * dt
        q_next = q + (arrivals - a_new) * dt
        q = q_next if q_next > 0.0 else 0.0
        arrived += arrivals * dt
        admitted += a_new * dt
        t += dt
    if median_state is None or median.end is None or last.end is None:
        return steady  # not resolved within the step budget: the steady state
    assert median.start is not None and median.ttft is not None and median.queue is not None
    assert last.start is not None
    n_med, step_med, _q = median_state
    running = max(1, min(top, round(n_med)))
    _s, bound = _iteration(r, running, share(running))
    # the last request's end: with fixed lengths O tokens after its first; with varied lengths the run lasts
    # until the longest of those still running ends, their drain (`varied_drain_s`)
    if w.lengths == "varied":
        last_end = last.start + varied_drain_s(r, running_at_last)
    elif w.lengths == "uniform":  # mid-run: the running sequences' remaining lengths are the renewal residuals
        last_end = last.start + uniform_drain_s(r, running_at_last, turned_over=1.0)
    else:
        last_end = last.end
    # never faster than a full batch completes (the fluid's completions, c = n / duration, run ahead of
    # fixed-length requests' while a batch drains)
    end = max(last_end, n_requests / c_full)
    return LoadPoint(running=running, step_s=step_med,
                     tpot_s=(median.end - median.start) / out,
                     throughput_tok_s=n_requests * out / end, requests_per_s=n_requests / end,
                     ttft_s=median.ttft, queue_s=median.queue, bound=bound, saturated=rate > capacity,
                     capacity_rps=capacity, first_fill_requests=first_fill)


# How near the median request's rank may sit to the first fill's size before its TTFT is called bimodal
FIRST_FILL_EDGE = 0.2


def first_fill_edge_note(first_fill: float, n_requests: int) -> str:
    """A note where the median request sits at the edge of the first fill under vLLM's KV admission
    (`VllmKvAdmission`): the requests admitted before the grown sequences first overflow the pool get their first
    token at once, the rest wait behind the preempted, so the run's TTFTs fall in two groups far apart. Whether
    the median request (rank N / 2) is in the first group depends on how fast the requests came (a faster burst
    holds younger sequences and admits more, so the median TTFT can fall as the rate rises), and a few percent of
    rate or of KV pool moves it from one group to the other. "" when the median rank is not within
    FIRST_FILL_EDGE of the first fill."""
    median_rank = n_requests / 2.0
    if first_fill <= 0.0 or abs(median_rank / first_fill - 1.0) > FIRST_FILL_EDGE:
        return ""
    return (f"; about {first_fill:,.0f} of the {n_requests:,} requests get a first token before the grown "
            f"sequences first overflow the KV pool and the rest wait behind the preempted, so TTFTs fall in two "
            f"groups far apart; the median request (#{median_rank:,.0f}) is at the edge between them, and a few "
            f"percent more or less rate or KV pool moves the median TTFT from one group to the other")


def vllm_async_scheduling(r: ResolvedPlan) -> bool:
    """vLLM schedules iteration N+1 while iteration N runs on the GPU from 0.14 (async scheduling on by
    default: engines.VLLM_ASYNC_SCHEDULING_FROM, read in the 0.13.0 and 0.14.0 wheels; the same boundary as
    performance.host_seq_step_s)."""
    from mlrig.estimators.engines import vllm_async_scheduling_default

    return r.engine == "vllm" and vllm_async_scheduling_default(r.workload.engine_version)


def scheduler_block_steps(r: ResolvedPlan) -> int:
    """Decode iterations a new request cannot join: vLLM V0's multi-step scheduling (`--num-scheduler-steps n`,
    0.6.0 to 0.10.0, `engines.vllm_multi_step`) schedules once and then runs the same batch for n decode steps
    (vllm/engine/llm_engine.py `LLMEngine.step`: while `_has_remaining_steps` the cached scheduler outputs are
    reused, `_cache_scheduler_outputs_for_multi_step`; the scheduler is not called, so a waiting prompt is
    admitted only at the block's end). Prompts themselves run as one step (`Scheduler._get_num_lookahead_slots`
    gives prefills no lookahead without chunked prefill). LMDeploy's PyTorch engine up to v0.11 runs its
    decodes in blocks of 15 or 16 iterations between scheduler calls (`engines.lmdeploy_pytorch_decode_block`,
    read in its source; no plan key changes it). 1 elsewhere."""
    from mlrig.estimators.engines import lmdeploy_pytorch_decode_block, vllm_multi_step

    if r.engine == "lmdeploy":
        return lmdeploy_pytorch_decode_block(r.workload.engine, r.workload.engine_version)
    steps = r.workload.num_scheduler_steps or 1
    if r.engine != "vllm" or steps <= 1 or not vllm_multi_step(r.workload.engine_version):
        return 1
    return steps


def iteration_wait_s(r: ResolvedPlan, step_s: float, others: int, closed_loop: bool = False,
                     prefill_running: bool = False) -> float:
    """Time a new request waits for the engine's iterations before its own prefill can start.

    - With no other sequence running (`others` <= 0: one user of a closed loop, a rate load of one
      request in flight) the engine is idle when the request arrives: no wait.
    - Otherwise it waits for the running iteration to end (iteration-level scheduling, Yu et al. 2022
      "Orca"). A Poisson arrival comes at a random moment of it: half an iteration on average. A closed
      loop's request does not (`closed_loop`): a user sends it when the previous response's last token
      arrives, and that token was sampled at the end of an iteration, so the new request reaches the
      scheduler a fixed turnaround tau after an iteration began: the last token's detokenisation and
      streaming, the client, the new request's HTTP handling and tokenisation, which is the front end's
      round trip (`frontend_s`); it waits step - tau. That turnaround varies from request to request
      (client and HTTP scheduling) by about its own size, so once it reaches half an iteration the
      arrivals' phase is spread over the iteration and the wait is the Poisson half again:
      max(step - tau, step / 2), continuous and growing with the iteration. On a GDDR card, whose
      iterations (25-70 ms) are long beside a 5.5 ms front end, that is most of an iteration: over the fit
      rows of closed loops, LDSINGH-* (vLLM 0.23 on an RTX A6000, 2-256 users) 26 % -> 18 % median TTFT
      error (with `mixed_median_ttft_s`), LMDEPLOY-* (LMDeploy's profile_throughput, threads calling the
      engine in-process: no front end, tau 0, a whole iteration) 19 % -> 14 %; on an H100 (6.5 ms
      iterations, INFBENCH-0003) it stays half.
    - Under async scheduling (`vllm_async_scheduling`) the next iteration has already been scheduled
      while the running one executes, so the request joins the one after it: one iteration more.
      InferenceBench's H100 sweep (INFBENCH-0001/-0003, vLLM 0.21, Llama-3.1-8B, ~43-token chat prompts)
      shows it: median TTFT 13.98 ms at 1 user and 22.75 ms at 4, +8.8 ms where TPOT, the iteration,
      is 6.5-6.6 ms: ~1.3 iterations more at 4 users, where half an iteration alone gave none (the
      model had 12.2 ms at both).
    - SGLang's overlap scheduler before its in-thread rewrite has likewise scheduled the next iteration when a
      Poisson arrival comes (`sglang_arrival_behind_queued_batch`): one iteration more for open-loop loads.
    - Under vLLM V0's multi-step scheduling (`scheduler_block_steps` n > 1) the request waits for the running
      block of n decode iterations: half of it on average, for a Poisson arrival and for a closed loop's alike
      (a response's last token comes at any step of a block, its user's next request into the rest of it).
      DSTACKCMP-0094 / -0097 (fit: vLLM 0.6.4 ROCm, --num-scheduler-steps 15, Llama-3.1-405B FP8 on 8x MI300X,
      Poisson 16 / 32 req/s) measured median TTFTs of 715 / 3,757 ms with a ~200 ms median TPOT. Not when the
      running iteration is a prompt's prefill (`prefill_running`: a wave's first arrival, `wave_stagger_s`),
      which runs as a single step, after which the scheduler is called again and takes the waiting prompts."""
    if others <= 0:
        return 0.0
    block = 1 if prefill_running else scheduler_block_steps(r)
    if block > 1:
        return 0.5 * block * step_s
    queued = vllm_async_scheduling(r) or (not closed_loop and sglang_arrival_behind_queued_batch(r))
    extra = step_s if queued else 0.0
    if closed_loop:
        return max(step_s - frontend_s(r), 0.5 * step_s) + extra
    return 0.5 * step_s + extra


def front_end_queue_s(r: ResolvedPlan, rank: float) -> float:
    """What the member of rank `rank` of a wave of requests sent together waits for the requests ahead of it
    to cross the serving front end's serial stage one after another: (rank - 1) x efficiency.
    FRONTEND_SERIAL_S_PER_REQUEST (see there; 0 for engines without a Python HTTP front end in the plan's
    model). Hand check: rank 64.5 (the mean member of a wave of 128) under vLLM: 63.5 x 3.5 ms = 222 ms."""
    return max(0.0, rank - 1.0) * eff.FRONTEND_SERIAL_S_PER_REQUEST.get(r.engine or "", 0.0) * host_serial_rel(r)


def host_serial_rel(r: ResolvedPlan) -> float:
    """The host's per-request serial time relative to a server's (`front_end_queue_s`): efficiency.
    DESKTOP_HOST_SERIAL_REL where the GPU is a GeForce or workstation card (catalog `hardware_class`), 1 elsewhere.

    The serial stage is single-threaded Python (the API server's one asyncio event loop, the benchmark client's), so
    its time per request goes with the host CPU's single-thread speed, and the card's class says which host it is
    in: GeForce and workstation cards sit in desktops and workstations (desktop Core / Ryzen / Threadripper parts,
    boost clocks of 5-5.7 GHz), datacentre cards in servers (Xeon / EPYC parts at 2-4 GHz, the cloud instances the
    rows name). The plan names no host, and a GeForce card rented in a server host is priced as a desktop; the
    single-request front end (`frontend_s`) is latency-bound (process hand-offs, ZMQ round trips) and its fit rows
    show no such split, so it is left alone. Evidence and choice in efficiency.DESKTOP_HOST_SERIAL_REL."""
    return eff.DESKTOP_HOST_SERIAL_REL if r.gpu.hardware_class in eff.DESKTOP_HOST_CLASSES else 1.0


def _with_serial(gpu_s: float, serial_s: float) -> float:
    """A wave member's wait: the GPU's wave and the front end's serial stage run side by side, so the
    longer of the two (efficiency.FRONTEND_SERIAL_S_PER_REQUEST says why not their sum)."""
    return max(gpu_s, serial_s)


def frontend_s(r: ResolvedPlan) -> float:
    """The serving front end's share of TTFT (efficiency.API_FRONTEND_S): the OpenAI-compatible server's
    HTTP handling, chat template and tokenisation, the hand-off to the engine process and the first
    token's detokenisation and streaming, which a benchmark client's TTFT includes. vLLM's V1 engine
    (`engines.vllm_v1`) crosses a process boundary both ways and detokenises in the API process
    (efficiency.API_FRONTEND_V1_S).

    TensorRT-LLM's trtllm-serve has its own figure (API_FRONTEND_S["trt-llm"], read on WAYNETRT's single-user
    TensorRT-engine rows; the PyTorch backend's eager prefill pass is priced in the pass itself,
    performance.trtllm_prefill_host_layer_s). What grows with a wave's users is `front_end_queue_s` (efficiency.
    FRONTEND_SERIAL_S_PER_REQUEST), taken as the larger of it and the GPU's wave; the analysis below, of a
    cost added to the GPU's wave, predates the WAYNETRT-* rows that fix its size.

    WMXL4-* (fit: vLLM 0.23, Qwen2.5-0.5B on an L4 behind a 4-vCPU
    node, 1-32 users in lock-step waves) leaves 10 -> 64 ms unexplained at 1 -> 32 users beyond this figure,
    ~9 iterations at 32 users. A per-step cost per running sequence on the API process (detokenising and
    streaming each sequence's token) cannot be it: that process keeps pace with the steps, so n such costs fit
    in one iteration (TPOT, measured 7.1 ms at 32 users, right within 15 %), and they delay a new request by
    about one iteration at most. The rest fits each wave's requests crossing a serial stage (the API
    server's single event loop, or the benchmark client's) one after another at ~3.5 ms each.
    A cost of c per request ahead in the wave (rank k waits (k - 1) c, added to the GPU's wave) does not
    hold across the fit hosts: over the 33 vLLM V1 TTFT fit rows the median / p90 error is 30 / 52 % at
    c = 0, 30 / 52 % at 1 ms, 27 / 60 % at 2 ms, 27 / 57 % at 3 ms, because LDSINGH-0023's burst of 512
    (RTX A6000 host, already over-predicted) grows by 255 c; taken as overlapping the GPU's work (the larger
    of the two) it changes nothing below c ~ 4 ms. The per-request CPU time is the host's, which a plan does
    not state; left out."""
    from mlrig.estimators.engines import vllm_v1

    if r.engine == "vllm" and vllm_v1(r.workload.engine_version):
        return eff.API_FRONTEND_V1_S
    return eff.API_FRONTEND_S.get(r.engine or "", 0.0)


def single_burst_loop(w: WorkloadSpec, engine: str, running_limit: int) -> bool:
    """Whether a closed loop (`load: concurrency`) is one burst that runs at once: each of its `batch_size` users
    sends at most one request (`num_requests` <= batch_size), all at t = 0 into an idle engine, and no more than
    `running_limit` (the batch cap and the sequences the KV pool holds) of them, which is what `load: offline` with
    that `num_requests` describes; `serving_performance` prices it as that offline load, so the two plans agree.
    vLLM only, where its two paths were checked against each other and the rows. The burst is the static batch whose
    first tokens all come at the end of the whole burst's prefill, on V0 and V1 alike, although both schedulers fill
    each chunked-prefill iteration FCFS (vllm/core/scheduler.py `_schedule_chunked_prefill`; vllm/v1/core/sched/
    scheduler.py `Scheduler.schedule`), which would hand the median member its first token after about half the
    burst: the measured bursts put it at the whole burst. V0: LHLMI300X (fit, 0.6.3 on 8x MI300X, 1,024-token
    budget) 8 / 16 / 32 prompts measured 463 / 694 / 1,103 ms where the median member would wait 1 / 1 / 2
    iterations, 128 / 256 prompts ~260-330 ms per further iteration of the whole burst. V1: VLLMARC (fit, 0.10.2 on
    Arc Pro B60s) -29 / -28 / -25 % (one card) and -49 / -49 / -47 % (four) priced at the median member, +27 /
    +28 / +23 % and -7 / -7 / -10 % at the whole burst (branch s35-burstcons). The mechanism is not identified
    (candidates: the API server's serial request intake, the front end's first-token detokenisation). A burst past
    the cap is left to each path: the closed loop reports the mean apart (`wave_median_ttft_s`), which the offline
    backlog does not, and rows of both kinds are fitted (LDSINGH-0023 .. -0025, 512 users over a cap of 256). The
    burst's median member also waits for the iteration its first arrivals start (`burst_stagger_s`), as a closed
    loop's wave does (`wave_stagger_s`)."""
    return (w.load == "concurrency" and engine == "vllm" and w.num_requests is not None
            and 0 < w.num_requests <= w.batch_size and w.num_requests <= running_limit)


def burst_stagger_s(r: ResolvedPlan, n_requests: int) -> float:
    """What the median member of an offline burst (`load: offline`, all `n_requests` sent at once into an idle
    engine, the one-wave branch of `serving_performance`) adds to the whole burst's prefill, under vLLM: the
    iteration that the burst's first arrivals start on their own (`wave_stagger_s`, the closed loop's wave
    rule), which the later members wait for before they are prefilled (less those first prompts' share of the
    burst's prefill, which that iteration has done). 0 for one request and for other engines.

    How many arrive in time for that first iteration is a race of host timings (the engine loop wakes on its
    first request and drains what else is queued: V1 `EngineCore._process_input_queue`, V0's MQLLMEngine
    `run_engine_loop` -> `handle_new_input`); on the offline bursts of the fit rows it is
    efficiency.BURST_FIRST_DRAIN_REQUESTS (see there). The median is numpy's: of an even burst the mean of its
    two middle members, so a burst of 2 * BURST_FIRST_DRAIN_REQUESTS pays half the wait. Hand check (tests):
    bursts of 2 / 3 / 4 / 5 requests pay 0 / 0 / 1/2 / 1 of it."""
    m = n_requests
    if r.engine != "vllm" or m < 2:
        return 0.0
    drain = eff.BURST_FIRST_DRAIN_REQUESTS
    middle = [(m + 1) // 2] if m % 2 else [m // 2, m // 2 + 1]
    share = sum(1 for rank in middle if rank > drain) / len(middle)
    wait_s = wave_stagger_s(r, m)
    if share <= 0 or wait_s <= 0:
        return 0.0
    prompt = prefill_tokens(r.workload)

    def burst_s(k: int) -> float:  # as `performance.static_inference` prices a static batch's prefill
        return prefill_pass(r, k, prompt).seconds + float(vllm_chunked_iterations_extra_s(r, k, prompt))

    first_share_s = burst_s(m) - burst_s(m - min(drain, m - 1))
    return share * max(0.0, wait_s - first_share_s)


def offline_backlog(r: ResolvedPlan, pt: LoadPoint, n_requests: int) -> LoadPoint:
    """TTFT of an offline burst larger than the engine runs at once: the median request's wait.

    `vllm bench serve` without `--max-concurrency` (request rate inf) sends all N requests at once; the
    engine admits them first come, first served (vLLM's FCFS scheduler policy, SGLang's and
    TensorRT-LLM's default queues), `n` at a time, so the median request (rank N / 2) waits for
    - the prompts admitted before it: the first wave's min(N / 2, n) prefills, which all come before
      its own first token (FCFS prefill);
    - past the first wave, N / 2 - n completions: with completions at the steady rate lambda that is
      (N / 2 - n) / lambda (a fluid approximation of the batch-arrival queue; with fixed lengths the
      completions come in waves, which this smooths);
    and then its own prefill (chunked where the engine chunks) as in `load_point`. The fluid is right for
    exponential lengths; other lengths add the first wave's renewal lag (`backlog_wait_s`). The steady state's
    queueing terms (the M/D/1 prefill queue of Poisson arrivals, half an iteration) do not apply: a
    burst's waiting is this backlog, not a random queue. GPUStack's performance lab (GPUSTACK-* rows, 1,000
    ShareGPT or 500 random requests sent at once) shows the scale: Qwen3-32B on one A100 under vLLM 0.11
    ran ~100 sequences at a time and its median TTFT was 106 s of a 242 s run.

    The first wave's prefill is priced as the static burst of its requests is (`performance.static_inference`,
    the one-wave branch of `serving_performance`): one pass of all its tokens plus, under vLLM's chunked prefill,
    its further chunk iterations' fixed costs (`performance.vllm_chunked_iterations_extra_s`). Without them a
    burst just past the cap was priced below a burst at the cap: LHLMI300X-0026 / -0029 (fit: vLLM 0.6.3 on 8x
    MI300X, Llama-3.1-405B, V0's 512-token budget, 256 / 512 prompts of ~80 tokens, cap 256) measured 8.3 /
    17.5 s, priced 12.5 / 6.3 s; now 12.5 / 13.0 s. LHLMI300X-0029 / -0032 / -0035 / -0071 (512-2,048 prompts)
    -64 / -39 / -28 / -27 % -> -26 / -22 / -21 / -24 %; against: DSTACKCMP-0082 (1,000 prompts, 512-token budget
    on 8x H100) +4 -> +20 %. Held out, checked only: DSTACK405B-0028 / -0031 / -0034 (the same MI300X setup,
    512-2,048 prompts) -70 / -56 / -53 % -> -46 / -46 / -48 %."""
    w = r.workload
    if n_requests <= pt.running or pt.requests_per_s <= 0:
        return pt
    ahead = min(math.ceil(n_requests / 2), pt.running)
    prompt = prefill_tokens(w)
    # the first wave's prefill as a static batch has it, its chunk iterations' fixed costs included
    wave = prefill_pass(r, ahead, prompt).seconds + float(vllm_chunked_iterations_extra_s(r, ahead, prompt))
    wait = wave + backlog_wait_s(w, n_requests / 2.0 - pt.running, pt.running, pt.requests_per_s)
    own = pt.ttft_s - pt.queue_s
    return replace(pt, ttft_s=own + wait, queue_s=wait)


# Grid of `renewal_lag_cycles`' numeric renewal function: points per mean service time, and the completions per slot
# up to which it is solved numerically (beyond, the asymptote: within 0.01 cycle of the numeric lag there for range
# ratios 0.5-1, 0.03 at 0.2, whose narrow lengths keep the completions in waves longer).
RENEWAL_GRID_PER_CYCLE = 128
RENEWAL_NUMERIC_CYCLES = 8.0


def renewal_lag_cycles(per_slot: float, w: WorkloadSpec) -> float:
    """Extra time, in mean service times ("cycles"), that `per_slot` completions per slot take beyond the fluid
    `per_slot` cycles, for slots that all start together at t = 0 (an offline burst's first wave) and each then
    runs one request after another (an ordinary renewal process: D. R. Cox, "Renewal Theory", 1962, ch. 4).

    The expected completions of one slot by time t is the renewal function m(t), which tends to t / mu +
    (cv^2 - 1) / 2 (Cox sec. 4.5: Smith's asymptote; cv^2 the service time's squared coefficient of variation,
    `slot_service_cv2`), so the j-th completion per slot comes (1 - cv^2) / 2 cycles after j cycles:
    - exponential lengths (`lengths = "varied"`, cv^2 = 1): 0, m(t) = t / mu exactly: the fluid;
    - fixed lengths (cv^2 = 0): a whole wave ends at each cycle, m(t) = floor(t), so the lag would be ceil(j) - j
      (on average over j the asymptote's 1/2). Not priced: fixed-length plans keep the fluid they had, as no fit
      row has a fixed-length burst past its first wave to check it on (branch s37b-uniform's note in
      SOURCES-inference.md gives what it would move);
    - uniform lengths in [mu (1 - r), mu (1 + r)] (`lengths = "uniform"`, cv^2 = r^2 / 3): solved numerically up
      to RENEWAL_NUMERIC_CYCLES (m(t) = F(t) + int m(t - x) dF(x) on a grid of RENEWAL_GRID_PER_CYCLE points per
      cycle), the asymptote beyond. For r = 1 (uniform in [0, 2 mu]), m(t) = e^(t / 2 mu) - 1 while t <= 2 mu,
      so j = 0.5 / 1 completions take 2 ln 1.5 = 0.811 / 2 ln 2 = 1.386 cycles (lag 0.311 / 0.386), and the lag
      tends to 1/3;
    - capped exponential lengths (`max_output_tokens`, cv^2 0.28 for AccelMark's suite) would lag by the
      asymptote, 0.36 cycle; not priced either, for the same reason as fixed lengths.
    First principles, nothing fitted. A prompt's prefill is taken as part of the cycle (the fluid's rate counts it)."""
    j = max(0.0, per_slot)
    if j <= 0.0:
        return 0.0
    if w.lengths != "uniform":
        return 0.0  # the fluid, as before: see the docstring
    cv2 = slot_service_cv2(w)
    if j > RENEWAL_NUMERIC_CYCLES:
        return max(0.0, (1.0 - cv2) / 2.0)
    spread = w.length_spread
    lo, hi = 1.0 - spread, 1.0 + spread
    h = 1.0 / RENEWAL_GRID_PER_CYCLE

    def cdf(t: float) -> float:
        return min(1.0, max(0.0, (t - lo) / (hi - lo)))

    # service times rounded to the nearest grid point (unbiased; rounding up would add half a step per renewal),
    # the few shorter than half a step counted at one step; m[i] = sum_k pmf[k] (1 + m[i - k])
    pmf = [0.0]
    m = [0.0]
    i = 0
    first_k = max(1, math.floor(lo / h))  # the service time's support, [lo, hi]: pmf is 0 below
    while m[-1] < j:
        i += 1
        pmf.append(cdf((i + 0.5) * h) - (0.0 if i == 1 else cdf((i - 0.5) * h)))
        m.append(sum(pmf[k] * (1.0 + m[i - k]) for k in range(first_k, i + 1)))
    # linear between the grid points; m[i] counts services up to (i + 1/2) h
    t = (i - 0.5 + (j - m[i - 1]) / max(1e-12, m[i] - m[i - 1])) * h
    return max(0.0, t - j)


def backlog_wait_s(w: WorkloadSpec, beyond: float, wave: int, requests_per_s: float) -> float:
    """Wait of an offline burst's request for the completions that free its slot: `beyond` requests past the
    first wave of `wave` requests (all started together) at the steady `requests_per_s`, the fluid `beyond` /
    rate, plus the first wave's renewal lag (`renewal_lag_cycles`) in its cycles of `wave` / rate (each slot's
    mean service time). LIVINFLYA100-0025 (fit: SGLang 0.4.7.post1, Mistral-7B on one A100 PCIe, 1,000 random
    1024/1024 prompts at range ratio 0, lengths uniform in 1..1,024, cv^2 1/3): the median request is 300 past a
    first wave of 200; at the source's own completion rate (1,000 requests in 194.6 s) the fluid gives a median
    TTFT of 67.1 s and the lag 80.1 s, measured 80.1 s; LIVINFLYA100-0035 / -0037 / -0021 / -0027 (3,000 / 5,000
    bursts, 4,096-token outputs): fluid -2 / -5 / -7 / -12 %, with the lag +3 / -2 / +2 / -6 % (branch s37b-uniform;
    mlrig's own rate for these runs is 15-45 % too high, see SOURCES-inference.md)."""
    if beyond <= 0.0 or requests_per_s <= 0.0 or wave <= 0:
        return 0.0
    cycle_s = wave / requests_per_s
    return beyond / requests_per_s + renewal_lag_cycles(beyond / wave, w) * cycle_s


def uniform_drain_s(r: ResolvedPlan, running: float, turned_over: float) -> float:
    """Time for `running` sequences of uniform output lengths (`lengths = "uniform"`: [a, b] = [O (1 - r),
    O (1 + r)]) to end once no more are admitted, in decode-only iterations priced as `decode_step` at each
    interval's expected batch, as `varied_drain_s` does for exponential lengths (which are memoryless; these are
    not). A fresh batch (`turned_over` 0: a burst that all started together) has remaining lengths
    S(x) = P(L > x): 1 below a, (b - x) / (b - a) within; a batch in the middle of a run (`turned_over` 1) has the
    renewal residuals, S_e(x) = (1 / O) int_x^b S(u) du (Cox 1962, "Renewal Theory", sec. 5.2), mean
    O (1 + cv^2) / 2; in between, the mix. Over an interval of iterations, the expected iterations with any
    sequence still running are int 1 - (1 - S)^n and the tokens int n S (midpoint rule, DRAIN_SEGMENTS x 4
    intervals over [0, b]). No factor."""
    w = r.workload
    out = max(1, w.output_tokens)
    n_seq = round(running)
    if n_seq < 1:
        return 0.0
    spread = w.length_spread
    a, b = out * (1.0 - spread), out * (1.0 + spread)
    mix = min(1.0, max(0.0, turned_over))

    def survival(x: float) -> float:
        fresh = 1.0 if x < a else max(0.0, (b - x) / max(1e-9, b - a))
        if x < a:
            residual = (a - x + (b - a) / 2.0) / out
        else:
            residual = max(0.0, b - x) ** 2 / (2.0 * max(1e-9, b - a) * out)
        return (1.0 - mix) * fresh + mix * residual

    ctx = max(1, w.prompt_tokens + out // 2)
    step_s: dict[int, float] = {}
    segments = 4 * DRAIN_SEGMENTS
    width = b / segments
    total_s = 0.0
    for i in range(segments):
        left = survival(min(b, (i + 0.5) * width))
        iterations = width * (1.0 - (1.0 - min(1.0, left)) ** n_seq)
        if iterations <= 0.0:
            continue
        batch = max(1, min(n_seq, round(n_seq * left * width / iterations)))
        if batch not in step_s:
            step_s[batch] = decode_step(r, batch, ctx).seconds
        total_s += iterations * step_s[batch]
    return total_s


# SGLang's admission estimate of the output tokens a request will still generate: new_token_ratio starts at 0.7
# (sglang global_config.py `default_init_new_token_ratio`, 0.4.x; environ.py SGLANG_INIT_NEW_TOKEN_RATIO, 0.5.x) and is
# reset to it whenever the scheduler goes idle (`self_check_during_idle` / 0.4.0 `event_loop_overlap`); max_new_tokens
# is clipped at 4,096 for the estimate (schedule_policy.py CLIP_MAX_NEW_TOKENS_ESTIMATION).
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_CLIP_MAX_NEW_TOKENS = 4096


def sglang_burst_admitted(kv_tokens: int, prompt: int, out: int) -> int:
    """Requests of a burst (all sent at once to an idle engine) that SGLang admits before its first decode step.

    Its scheduler is prefill-first (`sglang_prefill_first`): while a waiting request can be admitted it runs another
    prefill pass, and decodes only once none can. `PrefillAdder` (python/sglang/srt/managers/schedule_policy.py,
    read at 0.4.0 and 0.5.5.post1) admits a request while the KV pool's free and evictable tokens, less what the
    running requests are expected to still need, (max_new_tokens - generated) x new_token_ratio each, hold its prompt
    and its max_new_tokens (`add_one_req`); the requests of earlier passes are running by the next pass, so on an idle
    engine (ratio SGLANG_INIT_NEW_TOKEN_RATIO) the burst's first wave is pool / (P + 0.7 x min(O, 4,096)) requests,
    where its steady state, the ratio decayed toward its floor, holds pool / (P + O / 2 + ratio x O / 2)
    (`running_slots`, `sglang_reserved_output_tokens`). Benchmark clients set max_tokens to each request's output length
    (vLLM's and SGLang's bench_serving), so O is the plan's output."""
    reserve = prompt + SGLANG_INIT_NEW_TOKEN_RATIO * min(max(1, out), SGLANG_CLIP_MAX_NEW_TOKENS)
    return max(1, math.floor(kv_tokens / reserve))


def sglang_offline_burst(r: ResolvedPlan, pt: LoadPoint, n_requests: int, kv_tokens: int,
                         budget: int | None) -> LoadPoint:
    """TTFT of an offline burst of `n_requests` on SGLang: its median request (rank N / 2) among the first wave
    (`sglang_burst_admitted`, which SGLang sizes by its reservation, not by the steady batch `pt` runs) gets its
    first token once the pass after its own is launched (`sglang_wave_first_tokens`: the wave's passes run back to
    back, prefill-first, each pass's first tokens leave with the next pass's launch under the overlap scheduler;
    after the wave's last pass, the first decode iteration); past the first wave it waits for that wave's prefill
    and then for completions at the steady rate with the first wave's renewal lag (`backlog_wait_s`), as in
    `offline_backlog`, then its own prefill. The server's front
    end is added as in `load_point`."""
    w = r.workload
    prompt, out = prefill_tokens(w), max(1, w.output_tokens)
    first = min(n_requests, sglang_burst_admitted(kv_tokens, prompt, out))
    k = max(1, math.ceil(n_requests / 2))
    if k <= first:
        ttft = sglang_burst_first_wave_s(r, k, first, budget, min(first, pt.running))
        own = prefill_pass(r, 1, prompt).seconds + frontend_s(r)
        return replace(pt, ttft_s=ttft, queue_s=max(0.0, ttft - own))
    if pt.requests_per_s <= 0:
        return pt
    wait = prefill_pass(r, first, prompt).seconds + backlog_wait_s(w, k - first, first, pt.requests_per_s)
    own = pt.ttft_s - pt.queue_s
    return replace(pt, ttft_s=own + wait, queue_s=wait)


def sglang_burst_tpot_extra_s(r: ResolvedPlan, k: int, first: int, budget: int | None) -> float:
    """Time per output token that the later prefill passes of an SGLang burst's first wave of `first` requests add
    to the TPOT of its k-th member.

    SGLang's scheduler is prefill-first (`sglang_prefill_first`: `get_next_batch_to_run` returns a new prefill batch
    whenever a waiting request can be admitted, and the running batch's decode only when none can), so the wave is
    prefilled in back-to-back passes (`sglang_wave_first_tokens`) and no member decodes until the last pass is done.
    Member k's first token leaves with the pass after its own; its next token only after the passes of the prompts
    behind it, so its TPOT as benchmark clients compute it, (e2e - TTFT) / (O - 1), carries those passes' time over
    its O - 1 tokens: (prefill of the whole wave - prefill through member k's pass) / (O - 1). The same structure as
    `chunked_burst_tpot_extra_s`, where vLLM's decodes ride in the chunks; here they wait for all of them. No factor.
    Row: TONYGH200-0003 (fit; SGLang 0.5.5.post3, Qwen2.5-3B-Instruct on a GH200, 200 prompts of ~262 tokens sent at
    once, ~66 outputs, all in one wave): median TPOT 13.9 ms, priced as a decode step alone 5.0 ms (-64 %), with the
    passes behind the median member 7.4 ms (-47 %). The rest is not this structure's: the run's 1.77 s and its median
    TTFT of 587 ms put the wave's prefill at ~1.2 s where it is priced at 0.71 s (its throughput row, -0001, +42 %).
    No other scored row has an SGLang burst in one wave with a TPOT figure."""
    w = r.workload
    out = max(1, w.output_tokens)
    if out <= 1 or first <= 1 or k >= first:
        return 0.0
    prompt = prefill_tokens(w)
    tokens, _ = sglang_first_token_at(k, first, prompt, budget)
    through = max(k, min(first, math.ceil(tokens / max(1, prompt))))
    behind_s = prefill_pass(r, first, prompt).seconds - prefill_pass(r, through, prompt).seconds
    return max(0.0, behind_s) / (out - 1)


def sglang_burst_first_wave_s(r: ResolvedPlan, k: int, first: int, budget: int | None, running: int) -> float:
    """TTFT of the k-th request of a burst's first wave of `first` requests on SGLang (`sglang_offline_burst`): the
    wave is prefilled in back-to-back passes of `budget` tokens (prefill-first, FCFS) and a pass's first tokens leave
    with the next pass's launch, after the wave's last pass with the first decode iteration of `running` sequences
    (`sglang_first_token_at`, `first_token_emission_s`); then the server's front end."""
    prompt = prefill_tokens(r.workload)
    tokens, decode_next = sglang_first_token_at(k, first, prompt, budget)
    through = max(k, min(first, math.ceil(tokens / max(1, prompt))))
    ttft = prefill_pass(r, through, prompt).seconds + frontend_s(r)
    if decode_next:
        ttft += first_token_emission_s(r, running)
    return ttft


def fixed_length_waves(r: ResolvedPlan, pt: LoadPoint, n_requests: int, *, slots: int | None, cap: int | None,
                       budget: int | None) -> LoadPoint:
    """Output tokens/s of an offline run of `n_requests` fixed-length requests on an engine that admits each
    request at its full length (TensorRT-LLM's GUARANTEED_NO_EVICT, `kv_limit.no_evict`), `pt.running` at a time.

    Every request of a wave is admitted together, decodes the same number of tokens and ends in the same
    iteration, so the run is ceil(N / n) waves of O iterations, not N / n of them: the last wave holds only
    N mod n requests and still takes O iterations, each of which reads all the weights (and, being a smaller
    batch, less KV). The steady state (`load_point`) spreads the N x O tokens evenly over full batches and
    misses that tail. Time = floor(N / n) x O x step(n) + O x step(N mod n), each step `load_point`'s (the
    decodes and the wave's prompts' share). No factor: wave counting. TRTBENCH70-0008 (trtllm-bench 0.16,
    Llama-3.1-70B FP8 on 8x H100, 400 requests of 128 + 16,384 tokens, a pool that holds 165 at full length)
    runs as 165 + 165 + 70: 3 waves where the fluid count says 2.4. Hand check (tests): 5 requests at 2 a time
    are 3 waves, the last of one request."""
    from mlrig.estimators.kv_limit import no_evict

    if not no_evict(r.engine or "") or pt.running <= 0 or n_requests <= pt.running:
        return pt
    out = max(1, r.workload.output_tokens)
    full, last = divmod(n_requests, pt.running)
    total_s = full * out * pt.step_s
    if last:
        total_s += out * load_point(r, users=last, slots=slots, cap=cap, budget=budget).step_s
    thr = n_requests * out / total_s
    return replace(pt, throughput_tok_s=thr, requests_per_s=thr / out)


# Segments of `varied_offline_throughput`'s drain (the running batch falls by the same ratio in each).
DRAIN_SEGMENTS = 40
DRAIN_NOTE = ("; varied output lengths: the run ends in a drain of ever smaller batches (its longest requests), "
              "counted in its throughput")


def varied_offline_throughput(r: ResolvedPlan, n_requests: int, limit: int, steady_step_s: float) -> float:
    """Output tokens/s of an offline run of `n_requests` whose output lengths vary (`lengths = "varied"`:
    ShareGPT's, whose requests stop at the lengths the dataset gives), at most `limit` running at once.

    The benchmark's figure is all output tokens over the run's duration, and the run lasts until its longest
    request ends. With fixed lengths every request of a batch ends in the same iteration; with varied lengths
    the batch thins out as its short requests finish, and the long ones run on in iterations of a few
    sequences, each of which still reads all the weights: the drain. Output lengths are taken as exponential
    with the plan's mean O (memoryless: every running request ends in an iteration with probability 1 / O;
    the vLLM paper, Kwon et al. 2023, SOSP, fig. 11, shows ShareGPT's outputs with such a long tail), so
    - the first min(N, limit) prompts are prefilled together (one pass, as a static batch's);
    - while requests wait (N > limit) the batch stays full: N - limit completions at limit / O per
      iteration, each iteration the steady state's (`load_point`'s `step_s`, decodes and the prompts' share);
    - then the batch of n = limit decays as n e^(-k / O) over iterations k until its last request ends,
      O H_limit iterations (the expected longest of `limit` exponential lengths, `varied_drain_s`), priced as
      decode-only iterations (`decode_step`) at each interval's batch;
    - the opening batch's first tokens come with its prefill pass: one decode iteration fewer, so that one
      request alone lasts its TTFT + (O - 1) x TPOT (LHLMI300X-0001: 28.5 tok/s where its own TTFT and TPOT gave
      20.4, with O ln 2 iterations for its drain and O after its prefill).
    The tokens are N x O either way; only the time grows. No factor is fitted: the distribution is an
    assumption, stated here. Uniform lengths (`lengths = "uniform"`, a client's random dataset with a range ratio)
    are not memoryless: the run's last `limit` requests drain from the renewal residuals of a turned-over batch
    (a fresh one for a single wave), `uniform_drain_s`, holding O (1 + cv^2) / 2 tokens each still to decode.
    Where the client caps every output (`max_output_tokens`: AccelMark's suite caps ShareGPT outputs at 512
    tokens for a mean of ~343, ACCELMARK-*) the lengths are min(Exp(mu), C) with the same mean and the drain ends
    at the cap (`varied_drain_s`). GPUStack's ShareGPT runs (GPUSTACK-*, held out,
    checked only: 1,000 requests at once, mean ~202 output tokens, vllm bench serve keeping prompt + output
    <= 2,048) drain for ~1,500 iterations."""
    w = r.workload
    prompt, out = prefill_tokens(w), max(1, w.output_tokens)
    first = max(1, min(n_requests, limit))
    total_s = prefill_pass(r, first, prompt).seconds
    if w.lengths == "uniform":  # the drain starts from the renewal residuals once the slots have turned over
        turned = min(1.0, (n_requests - first) / first)
        held = out * ((1.0 - turned) + turned * (1.0 + slot_service_cv2(w)) / 2.0)  # the drain's tokens per slot
        total_s += max(0.0, n_requests * out - first * held) / first * steady_step_s
        total_s += uniform_drain_s(r, first, turned)
    else:
        if n_requests > first:
            total_s += (n_requests - first) * out / first * steady_step_s
        total_s += varied_drain_s(r, first)
    # the opening batch's first tokens come with its prefill pass (vLLM, SGLang and TensorRT-LLM sample them in
    # the prefill step), so its decodes start at the second token: one iteration of the full batch fewer; and the
    # engine's own request path (`request_path_s`) is in the run as in its TTFT. One request alone then lasts its
    # TTFT + (O - 1) x TPOT (`performance.static_inference`).
    total_s -= decode_step(r, first, max(1, w.prompt_tokens + out // 2)).seconds
    return n_requests * out / (total_s + request_path_s(r))


def capped_exponential_scale(mean_tokens: float, cap_tokens: int | None) -> float:
    """The scale mu of the exponential output lengths whose outputs, cut at the client's max_tokens cap C
    (`max_output_tokens`), have the plan's mean O: min(Exp(mu), C) has mean mu (1 - e^(-C / mu)) (integrate
    P(L > x) = e^(-x / mu) from 0 to C), solved for mu by bisection; a share e^(-C / mu) of the requests reach the
    cap. Uncapped (None): mu = O. A cap at or below the mean: every output reaches it (the lengths are fixed),
    mu = inf. AccelMark's suite (O 343, C 512, ACCELMARK-*): mu 593, 42 % of the outputs cut at 512."""
    if cap_tokens is None:
        return mean_tokens
    if cap_tokens <= mean_tokens:
        return math.inf

    def mean_of(mu: float) -> float:
        return mu * -math.expm1(-cap_tokens / mu)

    lo, hi = mean_tokens, 2.0 * mean_tokens
    while mean_of(hi) < mean_tokens:
        lo, hi = hi, 2.0 * hi
        if hi > 1e15 * cap_tokens:
            return math.inf
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mean_of(mid) < mean_tokens:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def varied_drain_s(r: ResolvedPlan, running: float) -> float:
    """Time for `running` sequences of exponential output lengths (mean O, `varied_offline_throughput`'s
    assumption) to end once no more are admitted, in decode-only iterations each priced as the decode step
    (`decode_step`) at its batch. Memoryless lengths make it the same whether the sequences have just started
    or have run for a while.

    Of n sequences with lengths Exp(mu), N_k = those still running after k iterations: E[N_k] = n e^(-k / mu)
    and P(N_k >= 1) = 1 - (1 - e^(-k / mu))^n. The drain lasts as long as the longest, E[max] = sum over k of
    P(N_k >= 1) = mu H_n (H_n the n-th harmonic number: the Renyi representation of exponential order statistics,
    the j-th last of them ending mu / j iterations after the one before; David & Nagaraja 2003, "Order
    Statistics", sec. 2.5), and decodes n O tokens in all. Over an interval of k, integrating P with
    s = 1 - e^(-k / mu) gives mu sum_{j=1..n} s^j / j iterations (s = 1: mu H_n), its tokens n mu (e^(-a / mu) -
    e^(-b / mu)); each interval is priced at its mean batch, tokens / iterations, which is exact where the decode
    step is affine in the batch (the weights read once, each sequence's KV on top). The intervals follow the
    expected batch down in DRAIN_SEGMENTS steps of equal ratio to half a request, then the tail. The fluid
    n e^(-k / mu) down to half a request, used before, lasted mu ln(2 n), which is close to mu H_n for a large
    batch but 0.69 O for a single request where the request lasts O: one request sent alone (LHLMI300X-0001,
    vLLM on 8x MI300X, Llama-3.1-405B, 66 outputs) came out at 28.5 tok/s where its own TTFT and TPOT gave 20.4.
    With the client's max_tokens cap C (`max_output_tokens`) the lengths are min(Exp(mu), C) with the plan's
    mean (`capped_exponential_scale`): whatever still runs at k = C ends there, so the sums stop at C (one
    request: mu (1 - e^(-C / mu)) = O iterations). (For sequences that have run a while the cap is nearer; they
    are taken as just started, an upper bound.) AccelMark's offline runs (ACCELMARK-0001/-0013/-0025 ..., fit:
    100 ShareGPT requests, max_tokens 512, mean 343) drain for at most 512 iterations, where the uncapped
    exponential gives 343 H_100 = 1,779: their output tok/s came out ~54 % low with the uncapped drain (median of
    the 15 vLLM HBM rows)."""
    w = r.workload
    out = max(1, w.output_tokens)
    ctx = max(1, w.prompt_tokens + out // 2)
    n_seq = round(running)
    if n_seq < 1:
        return 0.0
    cap = w.max_output_tokens
    mu = capped_exponential_scale(float(out), cap)
    step_s: dict[int, float] = {}  # the decode iteration by batch size: the drain's small batches recur
    if math.isinf(mu):  # every output reaches the cap: the batch runs whole for C iterations and ends together
        assert cap is not None
        return cap * decode_step(r, n_seq, ctx).seconds
    horizon = math.inf if cap is None else float(cap)

    def longest(k: float) -> float:  # expected iterations within the first k in which any sequence runs
        s = 1.0 if math.isinf(k) else -math.expm1(-k / mu)
        term, total = 1.0, 0.0
        for j in range(1, n_seq + 1):
            term *= s
            total += term / j
        return mu * total

    def survivors(k: float) -> float:  # expected sequences still running after k iterations
        return 0.0 if math.isinf(k) else n_seq * math.exp(-k / mu)

    end = max(0.5, n_seq * math.exp(-horizon / mu))
    ratio = (n_seq / end) ** (1.0 / DRAIN_SEGMENTS)
    edges = [min(horizon, mu * i * math.log(ratio)) for i in range(DRAIN_SEGMENTS + 1)]
    if edges[-1] < horizon:
        edges.append(horizon)  # the tail: the last requests' lengths beyond the expected batch's half request
    total_s = 0.0
    done = 0.0
    for a, b in itertools.pairwise(edges):
        if b <= a:
            continue
        upto = longest(b)
        iterations = upto - done
        done = upto
        if iterations <= 0.0:
            continue
        tokens = mu * (survivors(a) - survivors(b))  # decoded in this interval: the integral of E[N_k]
        batch = max(1, min(n_seq, round(tokens / iterations)))
        if batch not in step_s:
            step_s[batch] = decode_step(r, batch, ctx).seconds
        total_s += iterations * step_s[batch]
    return total_s


def median_prefill_wait_s(rho: float, service_s: float) -> float:
    """Median wait in the prefill queue (FCFS, utilisation `rho`, deterministic service `service_s`).

    The reported TTFT is a median (vLLM's and SGLang's benchmarks, PLAN-FORMAT's `ttft_ms`), and the
    wait of an M/G/1 queue is 0 with probability 1 - rho (an arrival finds the server idle; Kleinrock
    1975, "Queueing Systems" vol. 1 sec. 5.7), so below half load the median request does not queue at
    all. Above it the waits that do occur are taken as exponential with the M/D/1 mean wait
    rho S / (2 (1 - rho)) (Pollaczek-Khinchine), P(W > t) = rho exp(-2 (1 - rho) t / S): the median is
    S ln(2 rho) / (2 (1 - rho))."""
    if rho <= 0.5:
        return 0.0
    return service_s * math.log(2.0 * rho) / (2.0 * (1.0 - rho))


def erlang_c(servers: int, offered: float) -> float:
    """Probability that a Poisson arrival finds all `servers` busy and waits (M/M/c, offered load `offered`
    = arrival rate x mean service time, in Erlangs): the Erlang C formula (Kleinrock 1975, "Queueing
    Systems" vol. 1 sec. 3.5, eq. 3.42), computed through the Erlang B recursion B(k) = a B(k-1) /
    (k + a B(k-1)), C = c B / (c - a (1 - B)), which stays finite for hundreds of servers. 1 at or above
    saturation (a >= c)."""
    if offered <= 0.0:
        return 0.0
    if offered >= servers:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return servers * b / (servers - offered * (1.0 - b))


def slot_service_cv2(w: WorkloadSpec) -> float:
    """Squared coefficient of variation of the time a request holds a batch slot (its prefill and its
    outputs' iterations): 0 with fixed lengths (every request the same), 1 with varied ones (ShareGPT-like
    outputs that stop at EOS, taken as exponential: the M/M/c case). With the client's max_tokens cap C
    (`max_output_tokens`) the lengths are min(Exp(mu), C) (`capped_exponential_scale`), whose squared coefficient
    of variation is E[L^2] / O^2 - 1 (E[L^2] as `running_output_tokens` has it): 0.28 for AccelMark's ShareGPT
    suite (O 343, C 512), where 42 % of the outputs end at the cap. Uniform lengths (`lengths = "uniform"`) in
    [O (1 - r), O (1 + r)] (`range_ratio` r, `WorkloadSpec.length_spread`): variance (2 r O)^2 / 12, so r^2 / 3;
    1/3 for SGLang bench_serving's default random dataset (range ratio 0: lengths uniform in 1..L, r = 1)."""
    if w.lengths == "uniform":
        return w.length_spread ** 2 / 3.0
    if w.lengths != "varied":
        return 0.0
    held = running_output_tokens(w)
    out = float(max(1, w.output_tokens))
    if held is None:  # every output reaches the cap
        return 0.0 if w.max_output_tokens is not None else 1.0
    return max(0.0, 2.0 * held / out - 1.0)


def rbm_tail(x: float, drift: float, variance_rate: float, t: float) -> float:
    """P(Z(t) > x) for reflected Brownian motion Z started at 0 with `drift` and `variance_rate` (per s),
    at time `t` (s): 1 - Phi((x - drift t) / s) + exp(2 drift x / var) Phi(-(x + drift t) / s), s = sqrt(var t)
    (Abate & Whitt 1987, "Transient behavior of regulated Brownian motion, I", Adv. Appl. Prob. 19, eq. 1.3;
    Harrison 1985, "Brownian Motion and Stochastic Flow Systems", sec. 1.8). Drift 0 gives P(|B(t)| > x);
    a negative drift tends to the stationary exp(-2 |drift| x / var); a positive one to a normal around
    drift x t. Where exp() would overflow its product with the normal tail is taken through the tail's
    asymptotic series, phi(u) / v (1 - 1 / v^2 + 3 / v^4)."""
    if t <= 0.0 or variance_rate <= 0.0:
        return 1.0 if x < max(0.0, drift * t) else 0.0
    s = math.sqrt(variance_rate * t)
    u, v = (x - drift * t) / s, (x + drift * t) / s
    above = 0.5 * math.erfc(u / math.sqrt(2.0))  # 1 - Phi(u)
    if v > 8.0:
        reflected = math.exp(-u * u / 2.0) / (v * math.sqrt(2.0 * math.pi)) * (1.0 - 1.0 / v**2 + 3.0 / v**4)
    else:
        reflected = math.exp(2.0 * drift * x / variance_rate) * 0.5 * math.erfc(v / math.sqrt(2.0))
    return min(1.0, max(0.0, above + reflected))


def rbm_quantile(p_wait: float, drift: float, variance_rate: float, t: float) -> float:
    """The x at which p_wait x P(Z(t) > x) = 1/2 (`rbm_tail`): the median of a queue that is non-empty
    with probability `p_wait` and then follows the reflected Brownian motion; 0 when p_wait <= 1/2."""
    if p_wait <= 0.5 or t <= 0.0 or variance_rate <= 0.0:
        return 0.0
    target = 0.5 / p_wait
    s = math.sqrt(variance_rate * t)
    hi = max(0.0, drift * t) + 12.0 * s
    if drift < 0.0:
        hi += 5.0 * variance_rate / (2.0 * -drift)
    lo = 0.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if rbm_tail(mid, drift, variance_rate, t) > target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def median_slot_wait_s(servers: int, rate: float, service_s: float, cv2: float,
                       elapsed_s: float | None = None, occupancy: float | None = None) -> float:
    """Median wait for a batch slot under Poisson arrivals (FCFS; `servers` = the engine's running cap, e.g.
    TensorRT-LLM's max_batch_size or vLLM's max_num_seqs, or the KV pool's sequences; `service_s` = a
    request's mean time in a slot, its outputs' iterations; `cv2` its squared coefficient of variation,
    `slot_service_cv2`).

    Steady state (`elapsed_s` None, `load_point`): the fluid model admits every arrival at once while the
    mean batch, rate x service, is below the cap; but arrivals and lengths fluctuate, and the batch is full
    for a share of the time that grows steeply as the mean nears the cap: an arrival waits with the Erlang C
    probability (`erlang_c`), then for the next completion, and completions come at c / S. In M/M/c the wait
    beyond zero is exponential with rate (c - a) / S, P(W > t) = C exp(-(c - a) t / S) (Kleinrock 1975,
    "Queueing Systems" vol. 1 sec. 3.5); other service distributions scale the wait by k = (1 + cv2) / 2 (Lee
    & Longton 1959, the M/G/c approximation in Gross & Harris, "Fundamentals of Queueing Theory", 4th ed.,
    sec. 6.3: exact for M/M/c, about half for fixed lengths). The median is 0 while C <= 1/2, else
    k S ln(2 C) / (c - a). At or past saturation a steady state has no finite wait: 0 is returned and
    `load_point` reports the load as saturated.

    A finite run from an idle engine (`elapsed_s`: the request's arrival time, `rate_run_point`) has not
    built that stationary queue, and near capacity its queue is the fluctuation, not the mean: the number
    waiting is taken as reflected Brownian motion from 0 (the heavy-traffic limit of a queue, Harrison
    1985 ch. 1 and 3; transient law `rbm_tail`) with drift rate - mu (mu = c / S, a full batch's completions)
    and variance max(rate, mu) + mu cv2 per second (Poisson arrivals, and the completions of c slots whose
    service has squared CV cv2: below capacity the stationary limit is the steady state's above, k S
    ln(2 C) / (c - a); past it the arrivals' own variance), entered with the probability that the arrival
    finds the batch full, Erlang C at the batch the run holds then (`occupancy`, the fluid's running
    sequences: the pointwise-stationary approximation, Green & Kolesar 1991, Management Science 37), which
    is 1 once the batch is full. Its median less the mean growth (rate - mu) t of a queue past capacity is
    returned, divided by mu: the fluctuation's share, which `rate_run_point` adds to the fluid queue it
    builds (that growth, with the batch's fill from idle, is the fluid's). The result is continuous in the
    rate through capacity: about 0.67 sqrt(var t) / mu at rho = 1 (the median of |B(t)|), the stationary
    wait well below, and a vanishing share of the fluid queue well above.
    zhjunqin's RTX 3090 runs show the effect (held out: checked, nothing chosen on them): TensorRT-LLM 0.9
    with max_batch_size 40 kept up with 5 req/s of ShareGPT prompts (4.70 req/s over the run) yet its median
    TTFT was 1.65 s against 0.10 s at 1-2 req/s (ZHJUNQIN-0053 vs -0047/-0050), and the author blames the
    batch of 40."""
    if servers <= 0 or rate <= 0.0 or service_s <= 0.0:
        return 0.0
    offered = rate * service_s
    if elapsed_s is None:
        if offered >= servers:
            return 0.0
        k = (1.0 + max(0.0, cv2)) / 2.0
        c_wait = erlang_c(servers, offered)
        if c_wait <= 0.5:
            return 0.0
        return k * service_s * math.log(2.0 * c_wait) / (servers - offered)
    mu = servers / service_s
    drift = rate - mu
    variance_rate = max(rate, mu) + mu * max(0.0, cv2)
    batch = offered if occupancy is None else min(offered, max(0.0, occupancy))
    p_wait = erlang_c(servers, batch) if batch < servers else 1.0
    t = max(0.0, elapsed_s)
    queued = rbm_quantile(p_wait, drift, variance_rate, t) - max(0.0, drift) * t
    return max(0.0, queued) / mu


def lockstep_pool(w: WorkloadSpec, engine: str, wave_weight: float) -> bool:
    """Whether a serving run's sequences reach their full length together, so that vLLM's KV pool must hold
    them all at prompt + output at once (`kv_limit.kv_limited_running_batch`'s `lockstep`): a closed loop
    that stays in step (fixed lengths, every round a wave: `closed_loop_wave_share` 1) or an offline batch of
    fixed lengths (all submitted at once, same lengths). Their members are admitted by the blocks their
    prompts need now (V0 `BlockSpaceManager.can_allocate`, V1 `allocate_slots`), grow one token per
    iteration together, and when no block is free the scheduler preempts the most recently admitted by
    recompute (Kwon et al. 2023, "PagedAttention", sec. 4.5; V0 `Scheduler._schedule_running` pops the
    newest of the FCFS-sorted running queue, V1 `Scheduler.schedule` `self.running.pop()`, the newest
    admitted, under its default FCFS policy): the round ends with pool // (prompt + output) of them, the
    others back in the queue. Under varied lengths
    the sequences are of every age and the mean footprint (prompt + output / 2) holds. vLLM only here (the
    other paged engines keep the mean footprint: LMDEPLOY-0027, a fixed-length LMDeploy loop, ran 32 users
    where full lengths would hold 29).
    DSTACKR1-0125 / -0128 / -0131 (vLLM 0.7.4 V0 on 8x H200, DeepSeek-R1, 128 users of fixed 3,200-token
    prompts, 1,600-6,400 outputs, 500 requests): median TTFT 133-1,273 s, throughput 781-377 tok/s, where
    128 running at the mean footprint predicted ~30 s and 1,167-1,092 tok/s; MI300X's larger pool runs the
    same loads with ~23-30 s (DSTACKR1-0143 / -0146 / -0149)."""
    if engine != "vllm" or w.lengths != "fixed" or w.output_tokens <= 0:
        return False
    return w.load == "offline" or wave_weight >= 1.0


def lockstep_recompute_s(r: ResolvedPlan, kv_tokens: int, admitted: int, running: int,
                         n_requests: int | None = None) -> float:
    """Time per iteration that a lock-step round (`lockstep_pool`) spends re-prefilling what vLLM preempted.

    vLLM admits a waiting prompt when the blocks of its prompt are free, so a round starts with `admitted` =
    min(users, batch cap, pool // prompt) sequences; they grow together, the pool fills after g1 = (pool -
    admitted x P) / admitted tokens each, and from then on the newest are preempted until the `running`
    = pool // (P + O) that reach the end remain (Kwon et al. 2023, "PagedAttention", sec. 4.5). A sequence
    preempted by recompute loses its blocks and goes back to the waiting queue with the tokens it generated;
    when it is admitted again its prompt and those tokens are prefilled again as one prompt (vLLM V0
    `PreemptionMode.RECOMPUTE`, "recompute them when the sequences are resumed, treating the sequences as
    new prompts", the default for single-sequence requests; V1 sets the preempted request's
    `num_computed_tokens` to 0 and puts it back at the head of the waiting queue). The preempted are taken
    out between g1 and O generated tokens, so they are re-prefilled at P + (g1 + O) / 2 tokens on average,
    once each per round (a lower bound, as in `kv_limit.static_batch_time`: a resumed sequence can be
    preempted again). That prefill runs inside the
    round, whose O iterations it lengthens: its time / O per iteration. The admissions are counted on the
    part of the pool the survivors fill at their full length, running x (P + O), rather than the whole pool:
    the rest, less than one full sequence, admits at most 1 + O / P more prompts, within this estimate's
    accuracy, and counting it would make a pool a little bigger admit prompts only to preempt them, a
    slightly lower throughput at the same batch. A closed loop keeps its users' requests coming, so every
    round admits as many and preempts admitted - running; a run of a fixed `n_requests` (offline: all
    submitted at once) runs out of them: round k has N - k x running left, min(admitted, N - k x running) -
    running of them preempted, and the rounds' mean is priced (1,500 requests admitted at once with 449
    surviving each round preempt 1,051 + 602 + 153 over 3.3 rounds, not 1,051 in each). Hand check
    (tests): with a pool of exactly k full sequences, k = pool // (P + O), and room for 2k prompts, k are
    preempted per round."""
    w = r.workload
    prompt, out = max(1, w.prompt_tokens), max(1, w.output_tokens)
    # the pool the survivors fill at their full length: admissions and g1 are counted on it, so that every
    # figure is a function of `running` and a bigger pool never prices a smaller batch (tests)
    pool = min(kv_tokens, running * (prompt + out))
    admitted = min(admitted, pool // prompt)
    preempted = float(admitted - running)
    if n_requests is not None and n_requests > 0 and running > 0:
        rounds = math.ceil(n_requests / running)
        total = sum(max(0, min(admitted, n_requests - k * running) - running) for k in range(rounds))
        preempted = total * running / n_requests
    if preempted <= 0:
        return 0.0
    g1 = min(float(out), max(0.0, (pool - admitted * prompt) / admitted))
    k = max(1, round(preempted))
    return prefill_pass(r, k, int(prompt + (g1 + out) / 2)).seconds * preempted / k / out


def lockstep_round_admits_all(kv_tokens: int | None, users: int, running: int, cap: int | None, prompt: int,
                              out: int) -> bool:
    """Whether vLLM's KV pool takes a lock-step closed loop's whole next round back at once, so that no user's
    next request waits for a slot (`load_point`'s persistent queue does not form).

    A round admits by the prompts' blocks (min(users, cap, pool // P) sequences), grows together, and once the
    pool is full the newest are preempted by recompute until `running` = pool // (P + O) reach the end
    (`lockstep_recompute_s`). A preempted request already has its first token (it was preempted while
    decoding), and goes back to the head of the waiting queue (V0 `waiting.extendleft`, V1
    `waiting.prepend_request`). When the round's survivors end, their blocks are free and their users send
    their next requests: the scheduler takes the preempted first, each as a prompt of P + g tokens (g: what it
    had generated, (g1 + O) / 2 on average, g1 the growth at which the pool filled), then the new prompts, while
    their blocks fit (V0 `BlockSpaceManager.can_allocate`, V1 `allocate_slots`). If the pool holds the
    preempted at P + g and the `running` new prompts at P together, the whole round is admitted in that step and
    a new request's first token waits for the round's prefill wave only. Otherwise the new requests wait behind
    the preempted for blocks that free only as sequences end, a request's duration: the persistent queue.
    DSTACKR1-0149 (fit: vLLM 0.7.3 on 8x MI300X, DeepSeek-R1, 128 users of fixed 3,200 + 6,400 tokens, 500
    requests) on a pool of ~1.18M tokens that holds 123 at 9,600: the 5 preempted at ~6,200 tokens plus 123
    prompts are ~0.44M tokens, so the round comes back whole; measured median TTFT 29.6 s (23.0-23.5 s at 800-3,200
    outputs, -0053 / -0143 / -0146), where a request's slot wait (the persistent queue) gave 49 s. DSTACKR1-0125
    / -0128 / -0131 (8x H200, ~373k tokens, not even 128 prompts of 3,200 fit) keep the queue: 133-1,273 s
    measured. Scheduler structure from the source; nothing fitted. None (pool unknown): False."""
    if kv_tokens is None or kv_tokens <= 0 or users <= running:
        return False
    pool = min(kv_tokens, running * (prompt + out))  # as `lockstep_recompute_s` counts it
    admitted = min(x for x in (users, cap, kv_tokens // max(1, prompt)) if x is not None)
    if admitted < users:
        return False  # not even the round's prompts fit at once: users wait for blocks
    preempted = admitted - running
    g1 = min(float(out), max(0.0, (pool - admitted * prompt) / admitted))
    need = preempted * (prompt + (g1 + out) / 2.0) + running * prompt
    return need <= kv_tokens


def running_slots(kv_tokens: int, w: WorkloadSpec, engine: str = "", lockstep: bool = False) -> int:
    """Sequences a KV pool of `kv_tokens` keeps running. Paged engines allocate KV blocks as sequences
    grow (vLLM, Kwon et al. 2023 sec. 4; TurboMind's block manager), so the pool holds as many as fit
    at their mean footprint, the prompt plus half the output, not at their final context. LMDeploy 0.1
    ran 32 users of 2,048 + 2,048 tokens on a pool of ~121k tokens (LMDEPLOY-0027: no one waited for a
    slot, mean first-token latency 4.1 s), where full contexts would have held 29.

    TensorRT-LLM is the exception: its default capacity scheduler policy, GUARANTEED_NO_EVICT, starts a
    request only when the pool can hold it to its maximum length (prompt + max new tokens) so that it is
    never paused (TensorRT-LLM docs, "Useful Runtime Options: Capacity Scheduler Policy"; MAX_UTILIZATION,
    which packs by current length and may pause, is opt-in), and its STATIC_BATCH mode needs the whole
    batch at its final length: the pool holds sequences at their full context.

    SGLang grows its pool by current length too, but admits a request only while the pool also keeps free
    new_token_ratio x each running request's output still to come (`sglang_reserved_output_tokens`), so each
    running request takes that much more: at the ratio's floor, 0.098 x what it has still to generate."""
    from mlrig.estimators.kv_limit import kv_limited_running_batch

    held = running_output_tokens(w)
    slots = kv_limited_running_batch(kv_tokens, w.prompt_tokens, w.output_tokens, engine, lockstep, held)
    if engine != "sglang" or lockstep or w.output_tokens <= 1:
        return slots
    # SGLang's admission keeps each running request's expected remaining output free (`sglang_reserved_output_tokens`);
    # the ratio's run mean depends on the run's decode steps, which depend on the batch: once more with the first batch
    ahead = w.output_tokens / 2.0 if held is None else held
    for _ in range(2):
        reserve = sglang_reserved_output_tokens(ahead, sglang_run_decode_steps(w, slots))
        slots = kv_limited_running_batch(kv_tokens, w.prompt_tokens, w.output_tokens, engine, lockstep, held, reserve)
    return slots


# SGLang's new_token_ratio decays by (init - floor) / 600 every decode step that needs no retraction, to a floor of
# init x 0.14 (global_config.py `default_min_new_token_ratio_factor` 0.14, `default_new_token_ratio_decay_steps` 600;
# scheduler.py `update_running_batch`, 0.4.x; environ.py SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR /
# SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS from 0.5).
SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS = 600


def sglang_run_decode_steps(w: WorkloadSpec, running: int) -> float | None:
    """Decode steps of a run of `w.num_requests` requests at `running` at a time (N x O / n), None where the run's
    length is not stated (a steady state of no end: the ratio's floor, `sglang_mean_new_token_ratio`)."""
    if not w.num_requests or running <= 0:
        return None
    return w.num_requests * max(1, w.output_tokens) / running


def sglang_mean_new_token_ratio(steps: float | None) -> float:
    """SGLang's new_token_ratio averaged over a run of `steps` decode steps that starts from an idle engine: it starts
    at SGLANG_INIT_NEW_TOKEN_RATIO (0.7) and falls linearly by (0.7 - 0.098) / 600 a step to its floor 0.7 x 0.14 =
    0.098 (SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS), so over S <= 600 steps its mean is
    0.7 - (0.7 - 0.098) x S / 1,200 and over longer runs (600 x 0.399 + (S - 600) x 0.098) / S; a run of no stated
    length sits at the floor. A retraction (the pool full at a decode step: `retract_decode`) sets it to the kept
    requests' (decoded + 20 each) / max_new_tokens and it decays again; that is left out: on the fit rows below the
    running batch comes out the same at every shape only with the ratio near its floor. Hand check (tests): 0.399
    over 600 steps, (600 x 0.399 + 3,400 x 0.098) / 4,000 = 0.1432 over 4,000."""
    init = SGLANG_INIT_NEW_TOKEN_RATIO
    floor = init * SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
    if steps is None:
        return floor
    steps = max(1.0, steps)
    ramp = float(SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS)
    if steps <= ramp:
        return init - (init - floor) * steps / (2.0 * ramp)
    return (ramp * (init + floor) / 2.0 + (steps - ramp) * floor) / steps


def sglang_reserved_output_tokens(remaining_tokens: float, steps: float | None) -> float:
    """Tokens SGLang's admission keeps free for each running request beyond what it holds: new_token_ratio x the
    output it has still to generate (max_new_tokens - generated, clipped at 4,096).

    `PrefillAdder` (python/sglang/srt/managers/schedule_policy.py, read at 0.4.0 and 0.5.5.post1: `rem_total_tokens`
    = free + evictable tokens less, for each running request, min(max_new_tokens - len(output_ids), 4,096) x
    new_token_ratio) admits a waiting request only while that holds its prompt and max_new_tokens (`add_one_req`), so
    under a backlog (prefill-first: `sglang_prefill_first`) the pool's running requests each take their prompt, their
    output so far and the ratio x their output to come: the steady batch is pool / (P + held + ratio x remaining),
    where the pool holding current tokens alone gives pool / (P + held) (`running_slots`). `remaining_tokens`: the
    output a running request has still to come on average, which equals what it holds (`running_output_tokens`: in a
    renewal process the age and the residual life of the request in service have the same mean, E[L^2] / (2 E[L]);
    O / 2 with fixed lengths). The ratio is its run mean (`sglang_mean_new_token_ratio`), near its floor 0.098 in a
    long run. First principles, nothing fitted.

    Checked on the fit rows LIVINFLYA100 / LIVINFLYDSQ (SGLang 0.4.7.post1 on one A100 PCIe 40GB, Mistral-7B /
    DeepSeek-R1-0528-Qwen3-8B; offline bursts of 1,000 random-dataset requests, lengths uniform in [1, L]): the
    source's running batch, output tok/s x mean ITL (Little's law), times P + held + ratio x remaining gives the same
    pool at every shape only with the ratio near its floor: Mistral, prompts / outputs 513 / 2,098, 2,033 / 127,
    2,033 / 2,098, 513 / 509: 125k / 119k / 124k / 116k tokens at 0.098, 202k / 123k / 168k / 156k at 1.0. That
    pool, ~120k tokens (DeepSeek-Qwen3 ~95k), was ~2/3 of the one mlrig sized (174k; 142k) while 0.4.7.post1 was
    priced with 0.4.7's mem_fraction_static 0.88; 0.4.7.post1 already runs 0.4.8's 0.75 on a 40 GB card
    (`engines.sglang_era_version`), which gives 131,680 and 104,256 tokens."""
    if remaining_tokens <= 0:
        return 0.0
    return sglang_mean_new_token_ratio(steps) * min(remaining_tokens, float(SGLANG_CLIP_MAX_NEW_TOKENS))


def running_output_tokens(w: WorkloadSpec) -> float | None:
    """Output tokens a running sequence holds on average under continuous batching: O / 2 with fixed lengths
    (None: `kv_limited_running_batch`'s default); with varied lengths more, because the sequences running at any
    moment are the longer ones (length-biased sampling: a request of L tokens is running for a time in proportion
    to L, and by then has decoded a uniform share of it). Time-averaged, a request holds its prompt and L^2 / 2
    token-iterations of output over its L iterations, so the pool's sequences hold E[L^2] / (2 E[L]) output
    tokens each (the mean age in renewal theory; Cox 1962, "Renewal Theory", sec. 5.2): O for exponential
    lengths, where O / 2 would count a mean request. With the client's max_tokens cap C the lengths are
    min(Exp(mu), C) (`capped_exponential_scale`), E[L^2] = 2 mu^2 (1 - e^(-c) (1 + c)), c = C / mu: AccelMark's
    ShareGPT suite (O 343, C 512) holds 219.6 where O / 2 is 172. Uniform lengths (`lengths = "uniform"`):
    E[L^2] = O^2 (1 + cv^2) with cv^2 = r^2 / 3 (`slot_service_cv2`), so O (1 + r^2 / 3) / 2: 2 O / 3 for
    lengths uniform in [0, 2 O]. First principles, nothing fitted."""
    if w.lengths == "uniform" and w.output_tokens > 1:
        return w.output_tokens * (1.0 + slot_service_cv2(w)) / 2.0
    if w.lengths != "varied" or w.output_tokens <= 1:
        return None
    out = float(w.output_tokens)
    mu = capped_exponential_scale(out, w.max_output_tokens)
    if math.isinf(mu):
        return None  # every output reaches the cap: fixed lengths
    if w.max_output_tokens is None:
        return out
    c = w.max_output_tokens / mu
    second = 2.0 * mu * mu * (1.0 - math.exp(-c) * (1.0 + c))
    return second / (2.0 * out)


def decodes_ride_in_prefill_chunks(engine: str, budget: int | None) -> bool:
    """Whether the running requests keep decoding while a wave's prompts are prefilled: vLLM's chunked-prefill
    scheduler (V1; V0 with --enable-chunked-prefill) puts the running decodes first in every iteration and
    fills the rest of the budget with prompt chunks (Agrawal et al. 2024, Sarathi-Serve, "stall-free
    batching"), and so does LMDeploy's TurboMind from v0.1.0a2 (its decodes first in each `forwardUnified`
    pass, the prompts' tokens after them: `lmdeploy_iteration_budget`), and TGI from 3.0 (the new batch's chunk
    is prefilled together with the running batch's decode step: `tgi_chunk_budget`). SGLang's scheduler runs waiting
    prompts' prefill batches before any decode batch (its mixed chunk mode is opt-in), and engines that
    prefill whole prompts stall the decodes too."""
    return engine in ("vllm", "lmdeploy", "tgi") and budget is not None


def closed_loop_wave_share(w: WorkloadSpec, engine: str = "", budget: int | None = None) -> float:
    """Share of a closed loop's requests that arrive in a synchronised wave (`load_point`'s `wave_weight`).

    All users send their first requests together. With fixed lengths (`lengths = "fixed"`: vllm bench
    serve's default `--dataset-name random`, whose `--random-range-ratio` defaults to 0, or a max_tokens cap
    that every greedy output reaches) the requests of a round are prefilled together, decode the same number
    of tokens and end in the same iteration, so every user sends the next request at the same moment: every
    round is a wave, whatever `num_requests` is. With varied lengths (ShareGPT, sampled outputs stopping at
    EOS, think times between requests) the users drift apart after the first round: only its users / N of
    the N requests arrive together, the rest into the steady state; a varied run of no stated length is taken
    as long (the steady state alone). INFBENCHL4-* (held out: SGLang 0.4.6 and vLLM on one L4, 100 requests
    of 128 greedy tokens each, 16-64 users) is such a lock-step run.

    Fixed lengths keep the loop in step only if the wave's members start decoding together. Where the
    running requests decode while the wave's prompt chunks are prefilled (`decodes_ride_in_prefill_chunks`)
    and the wave's prompts take more than one iteration's budget, the members' first tokens come one chunk
    iteration after another and each then decodes at once: they end as spread as they started, the next
    round arrives spread out, and only the opening round of a stated `num_requests` is a wave, as with varied
    lengths, though not as a Poisson trickle: they arrive at the budget's pace (`chunk_paced_rounds`). DSTACKR1-0116 /
    -0119 / -0122 (vLLM with --enable-chunked-prefill on 8x H200, DeepSeek-R1, 128 / 64 / 32 users of fixed
    3,272-token prompts and 800 outputs, 500 requests) show it: median TTFT 988 / 761 / 642 ms, mean 6,284 /
    1,988 / 1,066 ms, the opening wave's members in the mean only; SGLang's prefill-first scheduler keeps
    its loop in step on the same load (DSTACKR1-0107 / -0110 / -0113 on 8x MI300X: median ~ mean)."""
    users = max(1, w.batch_size)
    # a fixed-length run of no stated request count keeps its wave (a single round is the usual such run)
    spread = chunk_paced_rounds(w, engine, budget)
    if (w.lengths == "fixed" and not spread) or (w.num_requests is not None and w.num_requests <= users):
        return 1.0
    if w.num_requests is None:
        return 0.0
    return users / w.num_requests


def chunk_paced_rounds(w: WorkloadSpec, engine: str, budget: int | None) -> bool:
    """Whether a closed loop's later rounds arrive paced by the chunked-prefill budget: fixed lengths
    (`lengths = "fixed"`), a stated `num_requests` above the users (several rounds), decodes riding in the prompt chunks
    (`decodes_ride_in_prefill_chunks`) and a round's prompts more than one iteration's budget.

    The opening round is a wave whose prompts go through the budget one chunk iteration after another, so
    its members' first tokens leave at the budget's pace, ~(budget - n) / P prompts per iteration. Each
    member then decodes the same number of tokens, one per iteration, and its user sends the next request
    a fixed turnaround after the last one: the next round arrives at the pace its prompts were prefilled,
    so for as long as it lasts the prefill runs at its full budget, each request's tokens in the iterations
    after its arrival with its round's next members' behind them (`chunk_paced_ttft_s`). The rounds stay
    spread, not waves (`closed_loop_wave_share`), but not Poisson either."""
    users = max(1, w.batch_size)
    return (w.lengths == "fixed" and decodes_ride_in_prefill_chunks(engine, budget) and budget is not None
            and users * prefill_tokens(w) > budget and w.num_requests is not None and w.num_requests > users)


def chunk_paced_ttft_s(r: ResolvedPlan, n: int, others: int, t_f: float, budget: int) -> tuple[float, float]:
    """(wait, own prefill) of a request of a round paced by the chunked-prefill budget (`chunk_paced_rounds`).

    A later round holds the users' next requests, or what is left of the run's when fewer (N - n of them in a
    run of N < 2n requests: its last, partial round). Its m x P prompt tokens go through the budget's room
    (budget - n, beside the n decodes) in k = ceil(m P / room) iterations carrying m P / k prompt tokens each
    (`full_s`: the decode-only iteration plus that share at `t_f` per token, as `load_point` prices an
    iteration); the round arrives with the spacing at which the previous one's first tokens left, each group
    one iteration before the iteration that prefills it. The request arrives during an iteration (the closed
    loop's iteration wait, `iteration_wait_s`): the decode-only one before the round's prefill starts for the
    first of the k groups, a full one for the other k - 1, so their mean; its P tokens, with the rest of its
    group, then take ceil(P / room) full iterations, the last sampling its first token. No factor.

    DSTACKR1-0116 / -0119 / -0122 (fit: vLLM 0.7.4 V0 with --enable-chunked-prefill, budget 2,048, on 8x H200,
    DeepSeek-R1 FP8, 128 / 64 / 32 users of fixed 3,272-token prompts, 1,984 of them from the prefix cache, 800
    outputs, 500 requests; k = 86 / 42 / 21): median TTFT 988 / 761 / 642 ms (means 6,284 / 1,988 / 1,066 ms:
    the opening waves). Priced as a Poisson steady state (rare prompts into decode iterations) they came to
    281 / 241 / 205 ms; paced by the budget 445 / 417 / 381 ms. What is left is the chunk iterations' own time:
    the measured medians are ~two iterations of ~0.45 s where one is priced at 0.22 s (V0 runs a step holding
    a prompt eagerly; not fitted here). Held out, checked only: INFBENCHL4-0029 / -0038 (64 users of ~46-token
    prompts over 100 requests, one later round of 36, k = 1) -39 / +8 % -> -35 / +8 %; with the later round
    taken as a full one of 64 (k = 2), -0038 came to +50 %, which is how the partial round was noticed."""
    prompt = prefill_tokens(r.workload)
    dec_only, _ = _iteration(r, n, 0.0)
    room = max(1, budget - n)
    # a later round is the users' next requests, or what is left of the run's when fewer (its last, partial round)
    later = min(n, max(1, (r.workload.num_requests or n) - n))
    k = max(1, math.ceil(later * prompt / room))
    full_s = dec_only + min(room, later * prompt / k) * t_f
    arrival_iteration_s = ((k - 1) * full_s + dec_only) / k
    return iteration_wait_s(r, arrival_iteration_s, others, closed_loop=True), math.ceil(prompt / room) * full_s


def overloaded(rate: float | None, capacity_rps: float | None) -> bool:
    """Whether a Poisson rate is at or above the most requests/s the engine completes (a full batch's,
    `LoadPoint.capacity_rps`): the queue then grows for as long as requests arrive."""
    return rate is not None and capacity_rps is not None and capacity_rps > 0.0 and rate >= capacity_rps


def overload_note(w: WorkloadSpec, capacity_rps: float) -> str:
    """One line for a rate load at or above capacity (`overloaded`): what grows, and with what."""
    rate = w.request_rate or 0.0
    if w.num_requests:
        grows = (f"its queue grows through the run, so TTFT grows with the run's length ({w.num_requests:,} requests "
                 f"over {w.num_requests / rate:,.0f} s) and is very sensitive to the capacity near it")
    else:
        grows = "its queue grows without bound (give num_requests for a finite run's median TTFT)"
    return (f"overloaded: {rate:g} requests/s is at or above the ~{capacity_rps:.3g} requests/s this setup can serve: "
            f"{grows}; requests/s is capped at ~{capacity_rps:.3g}")


def overload_ttft_band(r: ResolvedPlan, pt: LoadPoint, n_requests: int, *, slots: int | None, cap: int | None,
                       budget: int | None, kv_tokens: int | None = None) -> float | None:
    """The ± band of a finite rate run's median TTFT where the rate is within the capacity's own band of it
    (rate >= (1 - b) x capacity, b = ERROR_BAND's throughput band, the p90 error of published serving
    throughputs): there the TTFT is set by how far the rate is past capacity, and a capacity b lower gives
    a far longer queue. The band is that TTFT over the estimate, less 1. An engine whose every time is
    s = 1 / (1 - b) longer runs a rate R as this one runs the rate s R with times s longer (the fluid model
    has no other time scale), so that TTFT is s x (`rate_run_point` at s R, same N) with the front end's
    fixed share kept unscaled. None where the rate is below that reach (the scope's band stands)."""
    rate = r.workload.request_rate or 0.0
    b = ERROR_BAND["throughput_tok_s"]
    if pt.capacity_rps is None or rate < (1.0 - b) * pt.capacity_rps or pt.ttft_s <= 0.0 or math.isinf(pt.ttft_s):
        return None
    s = 1.0 / (1.0 - b)
    slow = rate_run_point(r, rate * s, n_requests, slots=slots, cap=cap, budget=budget, kv_tokens=kv_tokens)
    front = frontend_s(r)
    return max(0.0, (s * (slow.ttft_s - front) + front) / pt.ttft_s - 1.0)


def pool_slots(r: ResolvedPlan, kv_tokens: int | None, engine: str, cap: int | None,
               wave: float) -> tuple[int | None, float]:
    """Sequences the KV pool keeps running (`running_slots`; None when the pool is unknown) and, for a run
    whose sequences reach full length together (`lockstep_pool`), the time per iteration spent re-prefilling
    what vLLM preempted (`lockstep_recompute_s`, 0 otherwise). `wave`: the closed loop's wave share."""
    w = r.workload
    lockstep = lockstep_pool(w, engine, wave)
    slots = running_slots(kv_tokens, w, engine, lockstep) if kv_tokens else None
    recompute = 0.0
    if lockstep and slots is not None and kv_tokens:
        # a round admits by the prompts' blocks and ends with `slots` at full length: the rest are preempted
        want = (w.num_requests or w.batch_size) if w.load == "offline" else w.batch_size
        admitted = min(x for x in (want, cap, int(kv_tokens) // max(1, w.prompt_tokens)) if x is not None)
        recompute = lockstep_recompute_s(r, int(kv_tokens), admitted, slots,
                                         want if w.load == "offline" else None)
    return slots, recompute


def serving_performance(r: ResolvedPlan, memory: Any | None) -> Performance:
    """A serving load (`workload.load` = concurrency | offline | rate) through `load_point`:
    throughput, requests/s and TTFT/TPOT medians of the steady state (see mlrig/estimators/py)."""
    plan, gpu, w = r.plan, r.gpu, r.workload
    s = _setup(r)
    from mlrig.estimators.engines import vllm_v1

    v1 = vllm_v1(w.engine_version)
    cap = batch_cap(plan, s.engine, gpu, v1)
    budget = prefill_budget(plan, s.engine, gpu, v1, r.arch.max_position_embeddings, r.arch)
    kv_tokens = getattr(memory, "kv_cache_capacity_tokens", None) if memory is not None else None
    paged = getattr(memory, "engine", "") in ("vllm", "sglang", "trt-llm", "lmdeploy", "tgi")
    wave = closed_loop_wave_share(w, s.engine, budget) if w.load == "concurrency" else 0.0
    slots, recompute = pool_slots(r, kv_tokens if paged else None, s.engine, cap, wave)
    if single_burst_loop(w, s.engine, min(x for x in (cap, slots, 10**9) if x is not None)):
        # every user sends one request, all at once: the offline burst of those requests, priced by one branch
        burst = serving_performance(r.varied(load="offline", num_requests=w.num_requests), memory)
        note = (f"concurrency load of {w.batch_size} users sending {w.num_requests} requests in all: one burst of "
                f"{w.num_requests} requests sent at once, priced as the offline load of them; ")
        return burst.model_copy(update={"explanation": note + (burst.explanation or "")})
    if w.load == "offline" and s.engine == "tgi" and budget is None:
        # TGI before 3.0: its router's admission rules and stalling prefills (`tgi_offline_burst`)
        n_req = w.num_requests or w.batch_size
        pool = int(kv_tokens) // max(1, w.prompt_tokens + w.output_tokens) if (paged and kv_tokens) else None
        pt = tgi_offline_burst(r, n_req, min(x for x in (cap, pool, n_req) if x is not None),
                               r.arch.max_position_embeddings)
    elif w.load == "offline":
        # An offline run with no request count is a max-throughput run: enough requests to keep the
        # engine at its batch cap / KV capacity (QServe's and TRT-LLM's max-throughput tables).
        given = "batch_size" in w.model_fields_set
        users = w.num_requests or (w.batch_size if given else (min(x for x in (cap, slots) if x is not None)
                                                                if (cap or slots) else w.batch_size))
        limit = min(x for x in (cap, slots, users) if x is not None)
        varied = w.lengths != "fixed"  # varied or uniform: requests end one by one, the run in a drain
        if users <= limit:  # one wave: every request starts together, as a static batch
            perf = estimate_inference(r.varied(load="static", batch_size=users), memory)
            thr = perf.throughput_tok_s or 0.0
            expl_static = perf.explanation or ""
            if varied:  # the batch drains as its requests end (`varied_offline_throughput`)
                thr = varied_offline_throughput(r, users, users, 0.0)
                expl_static += DRAIN_NOTE
            out_tok = max(1, w.output_tokens)
            update: dict[str, Any] = {
                "throughput_tok_s": thr, "requests_per_s": thr / out_tok, "explanation": expl_static,
                "total_throughput_tok_s": thr * (w.prompt_tokens + w.output_tokens) / out_tok}
            median = max(1, math.ceil(users / 2))
            extra_s = chunked_burst_tpot_extra_s(r, users, budget)
            if extra_s > 0 and perf.tpot_ms is not None:  # the other prompts' chunks ride in its decode steps
                update["tpot_ms"] = perf.tpot_ms + extra_s * 1e3
            late_s = burst_stagger_s(r, users)
            if late_s > 0 and perf.ttft_ms is not None:  # the first arrivals' iteration runs before the rest
                update["ttft_ms"] = perf.ttft_ms + late_s * 1e3
            if (s.engine == "sglang" and kv_tokens and sglang_overlap(r) and users > 1
                    and median <= sglang_burst_admitted(int(kv_tokens), prefill_tokens(w), out_tok)):
                # sent to SGLang's server at once, the batch is a burst of back-to-back prefill passes, not one pass:
                # its median request's first token leaves with the pass after its own (`sglang_burst_first_wave_s`)
                first = min(users, sglang_burst_admitted(int(kv_tokens), prefill_tokens(w), out_tok))
                update["ttft_ms"] = sglang_burst_first_wave_s(r, median, first, budget, first) * 1e3
                behind_s = sglang_burst_tpot_extra_s(r, median, first, budget)
                if behind_s > 0 and perf.tpot_ms is not None:  # its decodes wait for the passes behind it
                    update["tpot_ms"] = perf.tpot_ms + behind_s * 1e3
            return perf.model_copy(update=update)
        pt = load_point(r, users=limit, slots=slots, cap=cap, budget=budget, recompute_s_per_iter=recompute)
        if s.engine == "sglang" and kv_tokens and sglang_overlap(r):
            # SGLang admits a burst's first wave by its reservation, prefilled back to back (`sglang_offline_burst`)
            pt = sglang_offline_burst(r, pt, users, int(kv_tokens), budget)
        else:
            pt = offline_backlog(r, pt, users)
        if not varied:
            pt = fixed_length_waves(r, pt, users, slots=slots, cap=cap, budget=budget)
        if varied:
            thr = varied_offline_throughput(r, users, pt.running, pt.step_s)
            pt = replace(pt, throughput_tok_s=thr, requests_per_s=thr / max(1, w.output_tokens))
    elif w.load == "rate" and w.num_requests:
        pool = int(kv_tokens) if (paged and kv_tokens) else None  # vLLM admits by its blocks (`vllm_kv_admission`)
        duty = board_power_duty(r, w.request_rate or 0.0)
        rd = replace(r, gemm_duty=duty) if duty < 1.0 else r
        pt = rate_run_point(rd, w.request_rate or 0.0, w.num_requests, slots=slots, cap=cap, budget=budget,
                            kv_tokens=pool)
        if rd is not r and pt.saturated:  # below the sustained power, but busy all the time even at the rating
            pt = rate_run_point(r, w.request_rate or 0.0, w.num_requests, slots=slots, cap=cap, budget=budget,
                                kv_tokens=pool)
        else:
            r = rd
        ttft_band = overload_ttft_band(r, pt, w.num_requests, slots=slots, cap=cap, budget=budget, kv_tokens=pool)
    elif w.load == "rate":
        duty = board_power_duty(r, w.request_rate or 0.0)
        rd = replace(r, gemm_duty=duty) if duty < 1.0 else r
        pt = load_point(rd, rate=w.request_rate, slots=slots, cap=cap, budget=budget)
        if rd is not r and pt.saturated:  # busy all the time even at the rating: held at the bound
            pt = load_point(r, rate=w.request_rate, slots=slots, cap=cap, budget=budget)
        else:
            r = rd
    else:
        users = w.batch_size
        pt = load_point(r, users=users, slots=slots, cap=cap, budget=budget, recompute_s_per_iter=recompute,
                        wave_weight=wave, paced=chunk_paced_rounds(w, s.engine, budget),
                        kv_tokens=int(kv_tokens) if (s.engine == "vllm" and kv_tokens) else None)
    if w.load != "rate" or not w.num_requests:
        ttft_band = None
    single = decode_step(r, 1, w.mean_decode_context)
    total = pt.throughput_tok_s * (w.prompt_tokens + w.output_tokens) / max(1, w.output_tokens)
    capped = f", capped at {pt.running} running (batch cap / KV pool)" if pt.running < (w.batch_size or 0) else ""
    waiting = "unbounded" if math.isinf(pt.queue_s) else f"{pt.queue_s * 1e3:.0f} ms"
    # Plain words for the step (`LoadPoint.step_s`): one engine iteration decodes a token of every running request
    # and prefills some waiting prompts; under a rate load the running count is the requests being decoded.
    running = (f"rate load ({w.request_rate:g} requests/s): ~{pt.running} requests running at once{capped}"
               if w.load == "rate" else f"{w.load} load: {pt.running} sequences decode together{capped}")
    expl = (f"{running}; each engine step (a token for each of them, plus a share of the new prompts' prefill) "
            f"takes {pt.step_s * 1e3:.1f} ms; TTFT = {waiting} waiting (for the step under way, the prefill "
            f"queue, a free slot) + its own prefill and the server's front end ({s.engine})")
    if (s.engine == "vllm" and not v1 and budget is not None and w.enable_chunked_prefill is None
            and w.max_num_batched_tokens is None):
        expl += (f"; vLLM V0 {w.engine_version} chunks prefills by default at a max_model_len above 32K: "
                 f"{budget:,} tokens per step (--no-enable-chunked-prefill turns it off)")
    if w.load == "rate" and sglang_arrival_behind_queued_batch(r):
        expl += (f"; SGLang {w.engine_version}'s overlap scheduler has the next step scheduled when a request "
                 "arrives, so it waits for that step too")
    expl += board_power_duty_note(r)
    finite = w.load == "rate" and bool(w.num_requests)
    if finite and w.num_requests:
        expl += (f"; a run of {w.num_requests} requests over {w.num_requests / (w.request_rate or 1.0):.0f} s from an "
                 "idle engine: its median request's TTFT / TPOT, throughput over the whole run")
    tgi_burst = w.load == "offline" and s.engine == "tgi" and budget is None
    if tgi_burst:
        expl = (f"offline burst through TGI's router (before 3.0): up to {pt.running} sequences decode together; new "
                f"batches are admitted when enough wait or after 20 steps, each prefilled as a pass of its own that "
                f"pauses the running decodes (their TPOT carries it); median TTFT {pt.ttft_s:.1f} s ({s.engine})")
    elif (w.load == "offline" or finite) and w.lengths != "fixed":
        expl += DRAIN_NOTE
    admission = vllm_kv_admission(r, int(kv_tokens)) if (finite and paged and kv_tokens) else None
    if admission is not None and slots is not None and (cap is None or slots < cap):
        expl += (f"; vLLM admits a request while its prompt's KV blocks are free: up to "
                 f"~{min(cap or 10**9, int(admission.limit())):,} fresh prompts at once, ~{slots:,} once they have "
                 f"grown (the newest are then preempted and re-admitted before new requests)")
        if pt.first_fill_requests is not None and w.num_requests:
            expl += first_fill_edge_note(pt.first_fill_requests, w.num_requests)
    if recompute > 0:
        expl += (f"; fixed lengths run in step, so the KV pool must hold each running sequence at its full "
                 f"{w.prompt_tokens + w.output_tokens:,} tokens: vLLM preempts the rest by recompute, "
                 f"+{recompute * 1e3:.1f} ms per iteration re-prefilling them")
    band = error_band(gpu)
    floor: dict[str, float] = {}
    if ttft_band is not None and ttft_band > band["ttft_ms"]:
        # near or past capacity the TTFT hangs on the capacity (`overload_ttft_band`): wider than any scope says
        floor["ttft_ms"] = round(ttft_band, 3)
        band["ttft_ms"] = floor["ttft_ms"]
    perf = Performance(
        prefill_tok_s=w.prompt_tokens * pt.requests_per_s if w.prompt_tokens else None,
        decode_tok_s=1.0 / single.seconds,
        ttft_ms=None if math.isinf(pt.ttft_s) else pt.ttft_s * 1e3,
        ttft_mean_ms=None if pt.ttft_mean_s is None else pt.ttft_mean_s * 1e3,
        tpot_ms=pt.tpot_s * 1e3,
        throughput_tok_s=pt.throughput_tok_s,
        total_throughput_tok_s=total,
        requests_per_s=pt.requests_per_s,
        capacity_requests_per_s=pt.capacity_rps if w.load == "rate" else None,
        bound=pt.bound,
        explanation=expl,
        error_band=band,
        # the KV length the loaded iterations (TPOT, throughput) read: TGI's burst schedule prices its decodes at
        # the mean request's, every other load at the running sequences' mean (longer with varied lengths)
        decode_context_tokens=w.mean_decode_context if tgi_burst else running_decode_context(w),
    )
    perf.band_floor = floor
    return perf


def serving_curve(
    r: ResolvedPlan, concurrencies: list[int], kv_capacity_tokens: int | None = None
) -> list[ServingPoint]:
    """Continuous batching at each concurrency `c` (a closed loop of c users): what `mlrig plan --load
    concurrency --batch c` gives for the same setup (`load_point` with the loop's wave share and, for fixed
    lengths in lock-step, vLLM's full-length pool; Orca / vLLM / Sarathi-Serve, see mlrig/estimators/py).
    Beyond the KV capacity or the engine's batch cap, users queue for a slot. `tpot_ms` is the iteration
    time a running request sees; `tok_s_per_user` is aggregate / c, so it includes time spent queued;
    `ttft_ms` includes waiting for the iteration, the prefill queue and a free slot."""
    from mlrig.estimators.engines import vllm_v1

    w = r.workload
    s = _setup(r)
    v1 = vllm_v1(w.engine_version)
    cap = batch_cap(r.plan, s.engine, r.gpu, v1)
    budget = prefill_budget(r.plan, s.engine, r.gpu, v1, r.arch.max_position_embeddings, r.arch)
    out: list[ServingPoint] = []
    for c in concurrencies:
        if c <= 0:
            raise MlrigError(f"concurrency must be > 0, got {c}")
        fits = kv_capacity_tokens is None or c * w.context <= kv_capacity_tokens
        rc = r.varied(load="concurrency", batch_size=c)
        wave = closed_loop_wave_share(rc.workload, s.engine, budget)
        slots, recompute = pool_slots(rc, kv_capacity_tokens, s.engine, cap, wave)
        pt = load_point(rc, users=c, slots=slots, cap=cap, budget=budget, recompute_s_per_iter=recompute,
                        wave_weight=wave, paced=chunk_paced_rounds(rc.workload, s.engine, budget),
                        kv_tokens=int(kv_capacity_tokens) if (s.engine == "vllm" and kv_capacity_tokens) else None)
        out.append(
            ServingPoint(
                concurrency=c,
                throughput_tok_s=pt.throughput_tok_s,
                tok_s_per_user=pt.throughput_tok_s / c,
                tpot_ms=pt.tpot_s * 1e3,
                ttft_ms=pt.ttft_s * 1e3,
                bound=pt.bound,
                fits=fits,
            )
        )
    return out


def max_concurrency_for_latency(
    r: ResolvedPlan,
    min_tok_s_per_user: float,
    kv_capacity_tokens: int | None = None,
    limit: int = 4096,
    max_ttft_ms: float | None = None,
) -> int:
    """Largest concurrency whose per-user decode speed stays >= `min_tok_s_per_user` (and TTFT
    <= `max_ttft_ms` when given) with every sequence's KV in the cache (0 if none). Per-user speed
    falls and TTFT rises with concurrency on the `serving_curve` model, so a bisection finds it."""
    if min_tok_s_per_user <= 0:
        raise MlrigError("min_tok_s_per_user must be > 0")
    if max_ttft_ms is not None and max_ttft_ms <= 0:
        raise MlrigError("max_ttft_ms must be > 0")

    def ok(c: int) -> bool:
        p = serving_curve(r, [c], kv_capacity_tokens)[0]
        return p.fits and p.tok_s_per_user >= min_tok_s_per_user and (max_ttft_ms is None or p.ttft_ms <= max_ttft_ms)

    return largest_true(ok, 1, limit)


class ConcurrencyLimits(BaseModel):
    """The largest concurrency allowed by each limit separately, and the one that binds."""

    model_config = ConfigDict(defer_build=True)  # serving only: not built at start-up

    max_concurrency: int
    binding_limit: str  # "tok/s per user" | "TTFT" | "KV cache capacity" | "search limit"
    by_tok_s_per_user: int
    by_ttft: int | None = None
    by_kv_capacity: int | None = None  # sequences of `context` tokens the KV cache holds


def concurrency_limits(
    r: ResolvedPlan,
    min_tok_s_per_user: float,
    kv_capacity_tokens: int | None = None,
    max_ttft_ms: float | None = None,
    limit: int = 4096,
) -> ConcurrencyLimits:
    """`max_concurrency_for_latency`, split by limit so a report can name the one that binds (the
    smallest; ties go to the latency target, since buying memory would not help)."""
    speed = max_concurrency_for_latency(r, min_tok_s_per_user, None, limit)
    ttft = None
    if max_ttft_ms is not None:
        ttft = largest_true(lambda c: serving_curve(r, [c])[0].ttft_ms <= max_ttft_ms, 1, limit)
    kv = None if kv_capacity_tokens is None else kv_capacity_tokens // max(1, r.workload.context)
    candidates = [("tok/s per user", speed), ("TTFT", ttft), ("KV cache capacity", kv)]
    name, best = min(((n, v) for n, v in candidates if v is not None), key=lambda nv: nv[1])
    if best >= limit:
        name = "search limit"
    return ConcurrencyLimits(max_concurrency=best, binding_limit=name, by_tok_s_per_user=speed,
                             by_ttft=ttft, by_kv_capacity=kv)
