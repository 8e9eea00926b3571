"""A discrete-event run of vLLM V0's default scheduler (chunked prefill off) WITH its KV pool on a Poisson-rate
calibration row's plan, at the rates given, with the planner's own step times and KV pool: to check
serving.rate_run_point's KV admission (kv_limit.VllmKvAdmission) and its first fill against the scheduler.

    python scripts/v0_kv_sim.py ACCELMARKGD-0027 10 20 28 30 40 100 [--seeds 8]

The engine loop follows vllm/core/scheduler.py (v0.7.3): `_schedule_default` runs a prefill step of the waiting
requests, head first, while they fit max_num_seqs, max(max_model_len, 2048) tokens and the free blocks less the
1 % watermark (`BlockSpaceManager.can_allocate`: a request needs the blocks of its prompt and of what it had
generated before a preemption); else a decode step of every running sequence, where a sequence that needs a new
16-token block and finds none preempts the newest running one (`_schedule_running`: recompute, back at the head
of the waiting queue, `waiting.extendleft`). Output lengths are min(Exp(mu), max_output_tokens) with mu chosen so
the mean is the row's (`serving.capped_exponential_scale`), prompts the row's mean. It prints, per rate, the
median over seeds of the run's median TTFT (arrival to the first token's prefill step, plus the front end), the
planner's TTFT, and the share of requests whose TTFT is under 2 s (the first fill's, where the TTFTs fall in two
groups: `serving.first_fill_edge_note`).
"""

from __future__ import annotations

import argparse
import copy
import math
import random
import statistics

from mlrig.estimators import serving
from mlrig.planner import evaluate, resolve_plan
from mlrig.validation.runner import load_rows


def simulate(plan: dict, seeds: int) -> tuple[float, float]:
    """(median TTFT s, share of requests under 2 s), medians over `seeds` runs."""
    r, _ = resolve_plan(plan)
    result = evaluate(plan)
    kv = result.kv_cache_capacity_tokens or 0
    w = r.workload
    prompt, out = serving.prefill_tokens(w), max(2, w.output_tokens)
    cap_out = w.max_output_tokens or 10**9
    mu = serving.capped_exponential_scale(float(out), w.max_output_tokens) if w.max_output_tokens else float(out)
    rate, n_req = w.request_rate or 1.0, w.num_requests or 200
    pass_tokens = w.max_num_batched_tokens or max(w.max_model_len or w.context, 2048)
    max_seqs = w.max_num_seqs or 256
    blocks_total = kv // 16
    watermark = int(0.01 * blocks_total)
    passes: dict[int, float] = {}
    steps: dict[int, float] = {}

    def pass_s(k: int) -> float:
        if k not in passes:
            passes[k] = serving.prefill_pass(r, k, prompt).seconds
        return passes[k]

    def step_s(n: int) -> float:
        if n not in steps:
            steps[n] = serving._iteration(r, max(1, n), 0.0)[0]
        return steps[n]

    medians, fast = [], []
    for seed in range(seeds):
        rnd = random.Random(seed)
        t, arrive = 0.0, []
        for _ in range(n_req):
            t += rnd.expovariate(rate)
            arrive.append(t)
        length = [max(1, min(cap_out, int(rnd.expovariate(1.0 / mu)) + 1)) for _ in range(n_req)]
        now, nxt, done, used = 0.0, 0, 0, 0
        waiting: list[int] = []
        running: list[int] = []  # in admission order: the newest last
        made: dict[int, int] = {}  # output tokens held
        first: dict[int, float] = {}

        def blocks(j: int, made: dict[int, int] = made) -> int:
            return math.ceil((prompt + made.get(j, 0)) / 16)

        while done < n_req:
            while nxt < n_req and arrive[nxt] <= now:
                waiting.append(nxt)
                nxt += 1
            if not waiting and not running:
                now = arrive[nxt]
                continue
            batch: list[int] = []
            tokens = 0
            while (waiting and len(batch) < 16 and tokens + prompt <= pass_tokens
                   and len(running) + len(batch) < max_seqs):
                need = blocks(waiting[0])
                if blocks_total - used - need < watermark:
                    break
                j = waiting.pop(0)
                batch.append(j)
                used += need
                tokens += prompt + made.get(j, 0)
            if batch:
                now += pass_s(len(batch))
                for j in batch:
                    running.append(j)
                    if j not in first:
                        first[j] = now
                        made[j] = 1
                continue
            if not running:
                now = arrive[nxt]
                continue
            new_blocks = sum(1 for j in running if (prompt + made[j]) % 16 == 0)
            while new_blocks > blocks_total - used and running:
                victim = running.pop()
                used -= blocks(victim)
                new_blocks -= 1 if (prompt + made[victim]) % 16 == 0 else 0
                waiting.insert(0, victim)
            now += step_s(len(running))
            for j in list(running):
                before = blocks(j)
                made[j] += 1
                used += blocks(j) - before
                if made[j] >= length[j]:
                    running.remove(j)
                    used -= blocks(j)
                    done += 1
        ttfts = [first[j] - arrive[j] for j in range(n_req)]
        medians.append(statistics.median(ttfts))
        fast.append(sum(1 for x in ttfts if x < 2.0) / n_req)
    return statistics.median(medians) + serving.frontend_s(r), statistics.median(fast)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("row_id")
    ap.add_argument("rates", type=float, nargs="+")
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    row = next(r for r in load_rows() if r.id == args.row_id)
    for rate in args.rates:
        plan = copy.deepcopy(row.plan)
        plan["workload"]["request_rate"] = rate
        sim_s, fast = simulate(plan, args.seeds)
        perf = evaluate(plan).performance
        model_ms = perf.ttft_ms if perf is not None and perf.ttft_ms is not None else float("nan")
        print(f"{args.row_id} at {rate:g} req/s: simulated median TTFT {sim_s * 1e3:,.0f} ms ({fast:.0%} of the "
              f"requests under 2 s), planner {model_ms:,.0f} ms")


if __name__ == "__main__":
    main()
