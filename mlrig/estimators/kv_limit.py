"""The running batch a serving engine's KV pool allows, and a static batch larger than that.

A paged serving engine never runs more sequences than its KV pool holds: what does not fit waits.
- vLLM admits a waiting prompt only when its blocks fit (`BlockSpaceManager.can_allocate`, V0; the V1
  scheduler's `kv_cache_manager.allocate_slots`), and when a running sequence needs a new block for its
  next token and none is free it preempts the most recently admitted sequence, by recompute (V0's default
  for single-sequence groups, `PreemptionMode.RECOMPUTE`; V1 preempts by recompute only): its blocks are
  freed, it goes back to the queue with the tokens it has generated, and when blocks free up its prompt
  and those tokens are prefilled again (Kwon et al. 2023, "PagedAttention", SOSP '23, sec. 4.5). SGLang
  retracts decoding requests the same way, LMDeploy and TGI queue what their block managers cannot hold.
  Sequences grow while they run, so the pool holds them at their mean footprint (prompt + half the
  output; `kv_limited_running_batch`), or at their full length where vLLM runs them in step
  (`serving.lockstep_pool`: fixed lengths, all reaching the end together).
- TensorRT-LLM's batch manager with its default capacity scheduler policy GUARANTEED_NO_EVICT starts a
  request only when the pool can hold it to its maximum length, prompt + max new tokens, so nothing is
  ever paused (TensorRT-LLM docs, "Useful Runtime Options: Capacity Scheduler Policy"); the rest wait
  for a finished request's blocks. With the fixed lengths of a static batch they finish together, so
  the batch runs in waves of what fits at full length.

Admission itself goes by the prompt's blocks, not the mean footprint: after an idle spell vLLM gives first
tokens to up to pool // prompt-blocks requests before the growth preempts the newest (`VllmKvAdmission`,
followed through a rate run's fluid model by `serving.rate_run_point`).

`static_batch_time` prices a static batch (`workload.load` = static, `batch_size` sequences submitted
together, e.g. `benchmark_latency.py` / TRT-LLM `run.py`) that outgrows the running batch: waves, and
for engines that preempt, one recompute of the preempted sequences' contexts. The serving loads
(concurrency, offline, rate) take the same running batch through `serving.running_slots`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlrig.estimators.resolved import ResolvedPlan

# Engines with a KV pool and a scheduler that holds back what does not fit (memory.PAGED_ENGINES' engines).
PAGED_SCHEDULERS = ("vllm", "sglang", "trt-llm", "lmdeploy", "tgi")


def no_evict(engine: str) -> bool:
    """TensorRT-LLM's GUARANTEED_NO_EVICT: sequences are admitted at their full length, never preempted."""
    return engine.startswith("trt-llm")


def kv_limited_running_batch(kv_tokens: int, prompt_tokens: int, output_tokens: int, engine: str,
                             lockstep: bool = False, held_output_tokens: float | None = None,
                             reserved_tokens: float = 0.0) -> int:
    """Sequences that run together on a KV pool of `kv_tokens` (at least 1).

    Paged engines that preempt (vLLM, SGLang, LMDeploy, TGI) allocate blocks as sequences grow, so the pool
    holds as many as fit at their mean footprint, prompt + output / 2 (LMDeploy 0.1 ran 32 users of
    2,048 + 2,048 tokens on a pool of ~121k tokens, LMDEPLOY-0027, where full contexts would have held 29).
    TensorRT-LLM (GUARANTEED_NO_EVICT, `no_evict`) admits a sequence only at its full length, prompt +
    output. Hand check: 129,760 tokens of 1,024 + 1,024-token sequences hold 129,760 // 1,536 = 84 under
    vLLM and 129,760 // 2,048 = 63 under TensorRT-LLM.

    `lockstep`: the sequences run in step (`serving.lockstep_pool`: a vLLM closed loop or offline batch of
    fixed lengths), so they reach their full length in the same iteration and the pool must then hold
    each at prompt + output: vLLM preempts the newest until the rest fit (V0 `_schedule_running`, V1
    `schedule`; Kwon et al. 2023 sec. 4.5), and only pool // (prompt + output) reach the end together,
    as under no-evict (129,760 // 2,048 = 63).

    `held_output_tokens`: the output tokens a running sequence holds on average where that is not half the output
    (`serving.running_output_tokens`: varied lengths, whose running sequences are the longer ones); paged engines
    that grow their blocks only.

    `reserved_tokens`: what the engine's admission keeps free for each running sequence beyond what it holds
    (`serving.sglang_reserved_output_tokens`: SGLang's new_token_ratio x the output still to come); paged engines
    that grow their blocks only."""
    full = no_evict(engine) or lockstep
    held = output_tokens // 2 if held_output_tokens is None else held_output_tokens
    per_seq = prompt_tokens + (output_tokens if full else held + reserved_tokens)
    return max(1, int(kv_tokens // max(1, per_seq)))


@dataclass(frozen=True)
class StaticWaves:
    """A static batch run as `waves` rounds of at most `running` sequences."""

    running: int  # sequences that run together
    waves: float  # rounds of `running` (whole waves under no-evict; fractional where preemption refills)
    total_s: float  # the whole batch: prefills, decode steps and recompute
    ttft_s: float  # mean time to a sequence's first token
    recompute_s: float  # re-prefilling preempted sequences (0 under no-evict)
    preempted: int  # sequences preempted at least once (0 under no-evict)


def static_batch_time(r: ResolvedPlan, memory: Any, batch: int, offload: float = 0.0) -> StaticWaves | None:
    """A static batch of `batch` sequences that the engine cannot run at once, or None where it can.

    The running batch is the KV pool's (`kv_limited_running_batch`) or the plan's `max_num_seqs`, whichever
    is smaller. With n running and T(n) the static time of n sequences (prefill + every decode step,
    `performance.static_inference`):
    - no-evict (TensorRT-LLM): ceil(b / n) waves of n, the last of b mod n; the sequences of wave k
      start when wave k - 1 ends;
    - preempting engines: the pool stays full, finished or preempted sequences' blocks going to waiting
      ones, so the batch runs at n for b / n of T(n) (a fluid approximation), plus one recompute: the
      b - n_end sequences that cannot all stay to the end (n_end = pool // (prompt + output)) are preempted
      and their context, prompt + half the output on average, is prefilled again (a lower bound: a
      sequence can be preempted more than once).
    TensorRT-LLM before 0.8 (the efficiency key "trt-llm-2023") is left alone: its static-batch figures come
    from gptSessionBenchmark, whose GptSession generates the whole batch it is given at once (static
    batching, no scheduler to hold sequences back): the batch runs or fails to start (TRT061-0022/-0030,
    64 x 2,176 tokens on an L40S and 60 x 2,176 on an A100 80GB, were published, so they ran at once).
    Hand check (tests): 64 sequences of 1,024 + 1,024 tokens on 68,000 tokens under TensorRT-LLM run as
    two waves of 33 and 31."""
    found = _plan_waves(r, memory, batch, offload)
    return None if found is None else found[0]


def _plan_waves(r: ResolvedPlan, memory: Any, batch: int,
                offload: float) -> tuple[StaticWaves, StaticWaveArrays] | None:
    """`static_waves` of one plan's static batch on its memory estimate's pool (scalars), or None where the
    batch runs at once (told in plain Python first, `runs_at_once`, so the usual plan imports no numpy)."""
    engine = getattr(memory, "engine", "") or ""
    kv = getattr(memory, "kv_cache_capacity_tokens", None)
    if not kv or not engine.startswith(PAGED_SCHEDULERS):
        return None
    w = r.workload
    prompt, out = max(1, w.prompt_tokens), max(0, w.output_tokens)
    if runs_at_once(r, engine, int(kv), batch, prompt, out):
        return None
    a = static_waves(r, engine, kv, batch, prompt, out, offload)
    if a is None or not bool(a.active):
        return None
    return StaticWaves(int(a.running), float(a.waves), float(a.total_s), float(a.ttft_s), float(a.recompute_s),
                       int(a.preempted)), a


def runs_at_once(r: ResolvedPlan, engine: str, kv_tokens: int, batch: int, prompt: int, out: int) -> bool:
    """Whether a static batch runs at once on the pool (`static_waves`' test, in plain Python so the
    planner's scalar path imports no numpy where it does, the usual case)."""
    per_seq = prompt + (out if no_evict(engine) else out // 2)
    n = max(1, kv_tokens // max(1, per_seq))
    if r.workload.max_num_seqs is not None:
        n = min(n, r.workload.max_num_seqs)
    n_end = max(1, kv_tokens // max(1, prompt + out))
    preempted = 0 if (no_evict(engine) or out == 0) else batch - min(batch, n_end)
    return batch <= n and preempted == 0


@dataclass(frozen=True)
class StaticWaveArrays:
    """`StaticWaves` of each element of an array pass; `active`: the batch outgrows what runs at once."""

    active: Any
    running: Any
    waves: Any
    total_s: Any
    ttft_s: Any
    recompute_s: Any
    preempted: Any
    tpot_ms: Any  # of the running batch
    decode_tok_s: Any
    throughput_tok_s: Any  # over the whole batch


def static_waves(r: ResolvedPlan, engine: str, kv_tokens: Any, batch: Any, prompt: Any, out: Any,
                 offload: Any = 0.0) -> StaticWaveArrays | None:
    """`static_batch_time`'s arithmetic on scalars or numpy arrays alike (the planner's scalar path and the
    array pass of `mlrig.grid` run this one function), for a paged engine `engine` with `kv_tokens` of
    KV pool; None where the engine is not one of them (or is TensorRT-LLM before 0.8) or where every batch
    runs at once. `prompt` >= 1 and
    `out` >= 0 are the static batch's lengths."""
    import numpy as np

    from mlrig.estimators.performance import _setup, prefill_pass, static_inference

    if not engine.startswith(PAGED_SCHEDULERS):
        return None
    batch, prompt, out = np.asarray(batch), np.asarray(prompt), np.asarray(out)
    kv = np.asarray(kv_tokens)
    per_seq = prompt + (out if no_evict(engine) else out // 2)
    n = np.maximum(1, kv // np.maximum(1, per_seq)).astype(np.int64)
    if r.workload.max_num_seqs is not None:
        n = np.minimum(n, r.workload.max_num_seqs)
    n_end = np.maximum(1, kv // np.maximum(1, prompt + out)).astype(np.int64)
    # sequences that cannot all stay to the end are preempted (engines that preempt); with none, whole
    # waves: same-length sequences finish together and the next ones start then
    if no_evict(engine):
        preempted = np.zeros(np.broadcast(batch, out).shape, np.int64)
    else:
        preempted = np.where(out == 0, 0, batch - np.minimum(batch, n_end))
    active = ~((batch <= n) & (preempted == 0))
    if not np.any(active) or _setup(r).engine == "trt-llm-2023":
        return None  # every batch runs at once (the common case: no static_inference spent on it)
    if active.ndim and not active.all():  # an array pass: work out only the batches that run in waves
        sel = np.flatnonzero(active)

        def take(x: Any) -> Any:
            return np.broadcast_to(np.asarray(x), active.shape)[sel] if np.ndim(x) else x

        sub = static_waves(r, engine, take(kv), take(batch), take(prompt), take(out), take(offload))
        assert sub is not None
        fields = {}
        for name in ("running", "waves", "total_s", "ttft_s", "recompute_s", "preempted", "tpot_ms",
                     "decode_tok_s", "throughput_tok_s"):
            v = np.asarray(getattr(sub, name))
            full = np.zeros(active.shape, v.dtype) if v.dtype.kind in "iub" else np.full(active.shape, np.nan)
            full[sel] = v
            fields[name] = full
        return StaticWaveArrays(active=active, **fields)
    n = np.minimum(n, batch)
    f_n = static_inference(r, n, prompt, out, offload)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_n = np.where(out > 0, n * out / f_n.throughput_tok_s, n * prompt / f_n.prefill_tok_s)
        pre_n = np.asarray(f_n.ttft_ms) / 1e3
        if no_evict(engine):
            full, last = batch // n, batch % n
            waves = (full + (last > 0)).astype(float)
            f_last = static_inference(r, np.maximum(1, last), prompt, out, offload)
            t_last = np.where(out > 0, last * out / f_last.throughput_tok_s, last * prompt / f_last.prefill_tok_s)
            total_s = full * t_n + np.where(last > 0, t_last, 0.0)
            # wave k (0-based) of n sequences starts at k T(n): sum over k < full of k T(n) n, then the last
            starts = t_n * n * (full * (full - 1) / 2.0) + full * t_n * last
            ttft_s = starts / batch + pre_n
            recompute_s = np.zeros_like(total_s)
        else:
            waves = batch / n
            recompute_s = np.where(preempted > 0,
                                   prefill_pass(r, np.maximum(1, preempted), prompt + out // 2).seconds, 0.0)
            # the b - n that wait start, on average, half-way through the (b / n - 1) T(n) after the first round
            wait = (batch - n) / batch * (waves - 1.0) * t_n / 2.0
            total_s = waves * t_n + recompute_s
            ttft_s = wait + pre_n
        throughput = np.where(out > 0, batch * out / total_s, batch * prompt / total_s)
    return StaticWaveArrays(active=active, running=n, waves=waves, total_s=total_s, ttft_s=ttft_s,
                            recompute_s=recompute_s, preempted=preempted, tpot_ms=f_n.tpot_ms,
                            decode_tok_s=f_n.decode_tok_s, throughput_tok_s=throughput)


def static_waves_note(sw: StaticWaves, batch: int, kv_tokens: int, engine: str) -> str:
    """One line for the output: how many run at once, why, and what it costs."""
    rule = ("admitted only at full length: TensorRT-LLM GUARANTEED_NO_EVICT" if no_evict(engine)
            else "at their mean footprint; when the pool fills, sequences are preempted and recomputed")
    head = f"KV pool of {kv_tokens:,} tokens runs {sw.running} of the {batch} sequences at once ({rule})"
    if sw.preempted == 0:
        return f"{head}: {sw.waves:.0f} waves"
    return (f"{head}: ~{sw.waves:.2f} rounds; {sw.preempted} preempted, "
            f"{sw.recompute_s * 1e3:.0f} ms re-prefilling them")


def apply_static_waves(r: ResolvedPlan, memory: Any, perf: Any) -> Any:
    """`perf` (a static batch's Performance) with the batch limited by the KV pool / max_num_seqs
    (`static_batch_time`): throughput over the whole batch, TTFT the mean sequence's, TPOT that of the
    running batch; the explanation says so. Unchanged where the whole batch runs at once. The figures are
    `static_waves`', the function `mlrig.grid`'s array pass runs too."""
    from mlrig.estimators.performance import offload_of

    b = int(r.workload.batch_size)
    found = _plan_waves(r, memory, b, offload_of(memory))
    if found is None:
        return perf
    sw, a = found
    note = static_waves_note(sw, b, int(memory.kv_cache_capacity_tokens), memory.engine)
    ttft_ms = float(a.ttft_s * 1e3)
    return perf.model_copy(update={
        "throughput_tok_s": float(a.throughput_tok_s),
        "tpot_ms": float(a.tpot_ms),
        "decode_tok_s": float(a.decode_tok_s),
        "ttft_ms": ttft_ms if math.isfinite(ttft_ms) else perf.ttft_ms,
        "explanation": f"{perf.explanation}; {note}" if perf.explanation else note,
    })


# vLLM V0's block manager keeps this share of the GPU blocks free when it admits a prompt
# (vllm/core/block_manager.py `SelfAttnBlockSpaceManager.__init__`, `watermark: float = 0.01`,
# watermark_blocks = int(watermark x num_gpu_blocks), checked in `can_allocate`); V1's KVCacheManager admits
# down to the last free block (vllm/v1/core/sched/scheduler.py `Scheduler.schedule`: a waiting request is
# scheduled when `kv_cache_manager.allocate_slots` returns its blocks).
VLLM_V0_WATERMARK = 0.01


def vllm_admission_pool_tokens(kv_tokens: int, v1: bool, block_tokens: int = 16) -> int:
    """KV tokens that vLLM's admissions may fill: the whole pool under V1, the pool less V0's watermark
    (`VLLM_V0_WATERMARK`, in whole blocks). Hand check: a V0 pool of 47,040 tokens is 2,940 blocks of 16; the
    watermark keeps int(29.4) = 29 free, so admissions fill 2,911 blocks, 46,576 tokens."""
    blocks = kv_tokens // block_tokens
    if v1:
        return blocks * block_tokens
    return (blocks - int(VLLM_V0_WATERMARK * blocks)) * block_tokens


def vllm_admissible_sequences(pool_tokens: int, prompt_tokens: int, held_output_tokens: float,
                              block_tokens: int = 16) -> float:
    """Running sequences up to which vLLM still admits a waiting prompt, when each running one holds its prompt
    and `held_output_tokens` of output on average (a fluid count, not rounded).

    vLLM admits a waiting request when the free blocks hold its PROMPT (V0 `Scheduler._schedule_prefills` ->
    `BlockSpaceManager.can_allocate`: the prompt's blocks, less the watermark; V1 `Scheduler.schedule` ->
    `KVCacheManager.allocate_slots` for the tokens it schedules now), never its output to come: right after an
    idle spell the pool admits pool // prompt-blocks sequences, far more than it holds once they have grown
    (`kv_limited_running_batch`'s mean footprint), and the growth then preempts the newest
    (`VllmKvAdmission.step`). A sequence's blocks are whole blocks of `block_tokens` (vLLM's default
    --block-size 16, memory.VLLM_BLOCK_TOKENS): a fresh prompt takes ceil(P / 16) blocks, sequences whose
    outputs have spread over a block or more waste half a block each on average (linear in between). Hand
    check: 46,576 tokens admit 46,576 / 256 = 181.9 fresh 255-token prompts (16 blocks each), and
    46,576 / (255 + 219.6 + 7.5) = 96.6 sequences holding 219.6 output tokens each. Under V1's chunked prefill
    a new request needs the blocks of its first chunk only (min(P, budget) tokens), its later chunks' as it
    runs: the whole prompt is counted here, which is the same where P fits the budget."""
    prompt = max(1, prompt_tokens)
    fresh_waste = block_tokens * math.ceil(prompt / block_tokens) - prompt
    # from the prompt's own rounding (no output yet) to half a block once the outputs have spread over a block
    spread = min(1.0, max(0.0, held_output_tokens) / block_tokens)
    waste = fresh_waste + ((block_tokens - 1) / 2.0 - fresh_waste) * spread
    return pool_tokens / (prompt + max(0.0, held_output_tokens) + waste)


@dataclass
class VllmKvAdmission:
    """vLLM's KV admission followed through a rate run's fluid model (`serving.rate_run_point`).

    State: `held`, the mean output tokens a running sequence holds (0 after an idle spell), and `preempted`,
    the sequences preempted by recompute that wait at the head of the queue. Per time step:
    - admissions are capped at `limit()` running sequences (`vllm_admissible_sequences` at the current
      `held`), the batch cap aside: vLLM admits by the prompt's blocks;
    - every running sequence gains one token per decode iteration (1 / TPOT per second); fresh admissions hold
      none, and completions leave at the mean age (memoryless lengths), so `held` is the running sequences'
      output tokens over their count; it never passes `held_cap`, the steady state's
      (`serving.running_output_tokens`, O / 2 for fixed lengths), where the pool holds what
      `kv_limited_running_batch` counts;
    - where the grown sequences no longer fit, the newest are preempted (V0 `Scheduler._schedule_running`
      preempts from the end of the running queue and `_schedule_default` puts them back with
      `self.waiting.extendleft`; V1 `Scheduler.schedule` `self.running.pop()` and `_preempt_request`, back at
      the head of the waiting queue). They hold the fewest tokens, but the fluid lets them leave with the mean
      `held` (exact where the running sequences are of one age, as after a burst; where ages are spread it
      under-states the growth of those left running), and they are admitted again
      before any new request, their prompt prefilled again (the few tokens they had generated are left out: a
      lower bound of the recompute).
    A preempted request keeps the first token it had: the queue it waits in again adds to its TPOT, not its
    TTFT. First principles from vLLM's scheduler; nothing is fitted."""

    pool_tokens: int
    prompt_tokens: int
    held_cap: float
    held: float = 0.0
    preempted: float = 0.0

    def limit(self) -> float:
        """Running sequences up to which a waiting prompt is admitted now."""
        return vllm_admissible_sequences(self.pool_tokens, self.prompt_tokens, self.held)

    def readmitted(self, admitted: float) -> float:
        """Of `admitted` sequences (this step's admissions), those that are preempted ones coming back (taken
        first: they wait at the head of the queue); the rest are new requests."""
        back = min(self.preempted, admitted)
        self.preempted -= back
        return back

    def step(self, running: float, admitted: float, completed: float, iterations: float,
             cap: float) -> float:
        """Advance one time step: `running` sequences before it, `admitted` and `completed` during it, each
        running one decoding `iterations` tokens; returns the running sequences after it, less those
        preempted (added to `preempted`), at most `cap`."""
        after = max(0.0, running + admitted - completed)
        if after <= 0.0:
            self.held = 0.0
            return 0.0
        tokens = running * (self.held + iterations) - completed * self.held
        self.held = min(self.held_cap, max(0.0, tokens / after))
        fits = min(cap, self.limit())
        if after > fits:
            self.preempted += after - fits
            after = fits
        return after
