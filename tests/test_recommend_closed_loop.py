"""`recommend --min-throughput` prices each option's users as `mlrig plan --load concurrency --batch N` and
`mlrig serve` do: a closed loop with continuous batching (issue 10 §3: recommend uses exactly plan's speed
path). A user walk-through found 70B FP8 on one B200 at 29 users quoted at 1,017 tok/s aggregate (one static
batch of 29) where the closed loop `serve` and `plan --load concurrency` price gives 1,265 (512 in / 128 out)."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

BASE = ("--model", "llama-3.1-70b", "--precision", "fp8", "--min-throughput", "1000", "--cloud-only", "--gpu", "B200")


def run(*args: str) -> str:
    from mlrig.cli import app

    res = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.stdout


def run_json(*args: str) -> Any:
    return json.loads(run(*args, "--json"))


def closed_loop(gpu: str, count: int, users: int) -> dict[str, Any]:
    perf: dict[str, Any] = run_json("plan", "llama-3.1-70b", "--precision", "fp8", "--gpu", gpu, "-n", str(count),
                                    "--load", "concurrency", "--batch", str(users))["performance"]
    return perf


def searched(rec: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(option, its workload outcome) for each distinct GPU x count whose concurrency was searched."""
    out, seen = [], set()
    for o in rec["options"]:
        w = o["workloads"][0]
        if w["fits"] and w["concurrency"] is not None and (o["gpu"], o["gpus"]) not in seen:
            seen.add((o["gpu"], o["gpus"]))
            out.append((o, w))
    return out


def test_the_walk_through_setup_is_priced_higher_as_a_closed_loop() -> None:
    """The figures the walk-through compared: 29 users on one B200, one static batch against the closed loop."""
    static = run_json("plan", "llama-3.1-70b", "--precision", "fp8", "--gpu", "B200", "--batch", "29")["performance"]
    loop = closed_loop("B200", 1, 29)
    assert (static["prompt_tokens"], static["output_tokens"]) == (512, 128)
    assert loop["throughput_tok_s"] > 1.15 * static["throughput_tok_s"]  # 1,265 against 1,017 when written


def test_recommend_aggregate_is_plan_closed_loop_throughput_at_the_same_users() -> None:
    """Each option's aggregate, per-user speed and TTFT are `plan --load concurrency --batch N`'s for its N: the
    per-user speed the loaded one (1000 / TPOT, not one sequence's decode alone), the TTFT under that load."""
    rec = run_json("recommend", *BASE)
    rows = searched(rec)
    assert rows and any(o["feasible"] for o, _ in rows)
    for o, w in rows:
        perf = closed_loop(o["gpu"], o["gpus"], w["concurrency"])
        assert abs(w["throughput_tok_s"] - perf["throughput_tok_s"]) < 1, (o["name"], w, perf)
        assert abs(w["decode_tok_s"] - 1000.0 / perf["tpot_ms"]) < 0.01 * w["decode_tok_s"], (o["name"], w, perf)
        assert abs(w["ttft_s"] * 1000.0 - perf["ttft_ms"]) < 1, (o["name"], w, perf)
    one = next(w for o, w in rows if o["gpus"] == 1 and o["feasible"])
    n = one["concurrency"]  # the fewest users that reach 1,000 within the floors (10 tok/s, 5 s by default)
    assert n > 1 and one["throughput_tok_s"] >= 1000
    fewer = closed_loop("B200", 1, n - 1)
    assert fewer["throughput_tok_s"] < 1000 or 1000.0 / fewer["tpot_ms"] < 10 or fewer["ttft_ms"] > 5000


def test_per_user_floor_is_checked_on_the_loaded_speed() -> None:
    """--min-tok-s holds at the priced load: a closed loop's `decode_tok_s` is one sequence alone, so a floor
    checked on it would pass loads whose users each see far less."""
    rec = run_json("recommend", *BASE, "--min-tok-s", "55")
    for o, w in searched(rec):
        perf = closed_loop(o["gpu"], o["gpus"], w["concurrency"])
        assert perf["decode_tok_s"] > 1000.0 / perf["tpot_ms"]  # one sequence alone is faster than at load
        if o["feasible"]:
            assert 1000.0 / perf["tpot_ms"] >= 55
        else:
            assert "below" in (o["excluded_reason"] or "")


def test_the_answer_says_what_was_priced() -> None:
    out = " ".join(run("recommend", *BASE, "--top", "2").split())
    assert "users (the fewest that reach it; closed loop):" in out and "at that load" in out
    assert "plan --load concurrency --batch N" in out  # the assumption line names the load priced


def test_a_plan_with_its_own_load_is_priced_as_given() -> None:
    from mlrig.advisor.recommend import Workload, WorkloadUsage, needs_concurrency

    usage = WorkloadUsage(min_throughput_tok_s=1000)

    def plan(**w: Any) -> Workload:
        return Workload(label="x", plan={"model": {"name": "llama-3.1-8b"}, "workload": w}, usage=usage)

    assert needs_concurrency(plan(), usage) and needs_concurrency(plan(load="concurrency"), usage)
    assert not needs_concurrency(plan(load="rate", request_rate=2.0), usage)
    assert not needs_concurrency(plan(load="offline"), usage)
    assert not needs_concurrency(plan(batch_size=32), usage)


def test_an_engine_with_one_slot_is_said_to_serve_one_request_at_a_time() -> None:
    """GGUF on a local card runs llama.cpp, whose server the planner prices with one --parallel slot: the other
    users queue for it, so an aggregate target needs --max-num-seqs N (N slots); the answer says so, and with it
    the option serves more than one user at a time."""
    args = ("recommend", "--model", "llama-3.1-8b", "--precision", "q4_k_m", "--min-throughput", "100",
            "--local-only", "--gpu", "RTX 3060 12GB")
    one = run_json(*args)
    assert any("llama.cpp serves one request at a time" in a and "--max-num-seqs N" in a for a in one["assumptions"])
    w = one["options"][0]["workloads"][0]
    assert w["engine"] == "llama.cpp" and w["throughput_tok_s"] < 100
    slots = run_json(*args, "--max-num-seqs", "8")
    assert not any("one request at a time" in a for a in slots["assumptions"])
    w8 = slots["options"][0]["workloads"][0]
    assert w8["concurrency"] > 1 and w8["throughput_tok_s"] >= 100
    assert "(at a load of 1 user, the most the per-user floors allow; closed loop)" in " ".join(run(*args).split())
