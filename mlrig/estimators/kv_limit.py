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
  output; `kv_limited_running_batch`).
- TensorRT-LLM's batch manager with its default capacity scheduler policy GUARANTEED_NO_EVICT starts a
  request only when the pool can hold it to its maximum length, prompt + max new tokens, so nothing is
  ever paused (TensorRT-LLM docs, "Useful Runtime Options: Capacity Scheduler Policy"); the rest wait
  for a finished request's blocks. With the fixed lengths of a static batch they finish together, so
  the batch runs in waves of what fits at full length.

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
    from mlrig.estimators.performance import StaticInference
    from mlrig.estimators.resolved import ResolvedPlan

# Engines with a KV pool and a scheduler that holds back what does not fit (memory.PAGED_ENGINES' engines).
PAGED_SCHEDULERS = ("vllm", "sglang", "trt-llm", "lmdeploy", "tgi")


def no_evict(engine: str) -> bool:
    """TensorRT-LLM's GUARANTEED_NO_EVICT: sequences are admitted at their full length, never preempted."""
    return engine.startswith("trt-llm")


def kv_limited_running_batch(kv_tokens: int, prompt_tokens: int, output_tokens: int, engine: str) -> int:
    """Sequences that run together on a KV pool of `kv_tokens` (at least 1).

    Paged engines that preempt (vLLM, SGLang, LMDeploy, TGI) allocate blocks as sequences grow, so the pool
    holds as many as fit at their mean footprint, prompt + output / 2 (LMDeploy 0.1 ran 32 users of
    2,048 + 2,048 tokens on a pool of ~121k tokens, LMDEPLOY-0027, where full contexts would have held 29).
    TensorRT-LLM (GUARANTEED_NO_EVICT, `no_evict`) admits a sequence only at its full length, prompt +
    output. Hand check: 129,760 tokens of 1,024 + 1,024-token sequences hold 129,760 // 1,536 = 84 under
    vLLM and 129,760 // 2,048 = 63 under TensorRT-LLM."""
    per_seq = prompt_tokens + (output_tokens if no_evict(engine) else output_tokens // 2)
    return max(1, kv_tokens // max(1, per_seq))


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
    from mlrig.estimators.performance import _setup, prefill_pass, static_inference

    engine = getattr(memory, "engine", "") or ""
    kv = getattr(memory, "kv_cache_capacity_tokens", None)
    if not kv or not engine.startswith(PAGED_SCHEDULERS):
        return None
    w = r.workload
    prompt, out = max(1, w.prompt_tokens), max(0, w.output_tokens)
    n = kv_limited_running_batch(kv, prompt, out, engine)
    if w.max_num_seqs is not None:
        n = min(n, w.max_num_seqs)
    n_end = max(1, kv // max(1, prompt + out))
    # sequences that cannot all stay to the end are preempted (engines that preempt); with none, whole
    # waves: same-length sequences finish together and the next ones start then
    preempted = 0 if (no_evict(engine) or out == 0) else batch - min(batch, n_end)
    if (batch <= n and preempted == 0) or _setup(r).engine == "trt-llm-2023":
        return None
    n = min(n, batch)

    def total(f: StaticInference, m: int) -> float:
        return float(m * out / f.throughput_tok_s) if out > 0 else float(m * prompt / f.prefill_tok_s)

    f_n = static_inference(r, n, prompt, out, offload)
    t_n = total(f_n, n)
    pre_n = float(f_n.ttft_ms) / 1e3
    if preempted == 0:
        full, last = divmod(batch, n)
        waves = full + (1 if last else 0)
        total_s = full * t_n
        if last:
            total_s += total(static_inference(r, last, prompt, out, offload), last)
        starts = sum(k * t_n * n for k in range(full)) + (full * t_n * last if last else 0.0)
        return StaticWaves(n, float(waves), total_s, starts / batch + pre_n, 0.0, 0)
    waves_f = batch / n
    recompute_s = float(prefill_pass(r, preempted, prompt + out // 2).seconds)
    # the b - n that wait start, on average, half-way through the (b / n - 1) T(n) after the first round
    wait = (batch - n) / batch * (waves_f - 1.0) * t_n / 2.0
    return StaticWaves(n, waves_f, waves_f * t_n + recompute_s, wait + pre_n, recompute_s, preempted)


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
    running batch; the explanation says so. Unchanged where the whole batch runs at once."""
    from mlrig.estimators.performance import offload_of, static_inference

    w = r.workload
    b = int(w.batch_size)
    sw = static_batch_time(r, memory, b, offload_of(memory))
    if sw is None:
        return perf
    f = static_inference(r, sw.running, max(1, w.prompt_tokens), max(0, w.output_tokens), offload_of(memory))
    out = max(0, w.output_tokens)
    throughput = b * out / sw.total_s if out > 0 else b * max(1, w.prompt_tokens) / sw.total_s
    note = static_waves_note(sw, b, int(memory.kv_cache_capacity_tokens), memory.engine)
    return perf.model_copy(update={
        "throughput_tok_s": throughput,
        "tpot_ms": float(f.tpot_ms),
        "decode_tok_s": float(f.decode_tok_s),
        "ttft_ms": sw.ttft_s * 1e3 if math.isfinite(sw.ttft_s) else perf.ttft_ms,
        "explanation": f"{perf.explanation}; {note}" if perf.explanation else note,
    })
