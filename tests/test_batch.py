"""The array path (`mlrig.grid.evaluate_grid`, `evaluate_cases`) equals the one-plan path (`planner.evaluate`)
exactly (issue 15).

Random static-inference plans (every engine family, precisions, parallel layouts, -ngl offload, KV dtypes,
engine releases, vLLM limits) over random batches, contexts, prompts and outputs, and random training
plans (methods, optimizers, ZeRO stages, offload, checkpointing, TP/PP/CP/EP, nodes) over micro-batches
and sequence lengths; each configuration's figures must be bit-for-bit those of `evaluate` on the same
plan, and its error the same line.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest

from mlrig import planner
from mlrig.errors import MlrigError
from mlrig.grid import FIGURES, TRAINING_FIGURES, _plan_at, evaluate_cases, evaluate_grid
from mlrig.planner import evaluate_case, parse_plan
from mlrig.results import PlanResult
from mlrig.workload import Plan

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "gemma-2-9b", "gemma-3-27b", "mistral-7b-v0.1",
          "mixtral-8x7b", "gpt-oss-20b", "deepseek-v3", "llama-3.2-1b", "phi-3-mini-4k", "gpt2"]
GPUS = ["rtx-4090", "rtx-3090", "rtx-3060-12gb", "l40s", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb",
        "mi300x", "rx-7900-xtx", "arc-a770-16gb", "apple-m2-ultra-76c-192gb", "apple-m1-8c-16gb", "t4"]
ENGINES = [None, None, "vllm", "sglang", "trt-llm", "lmdeploy", "tgi", "llama.cpp", "ollama", "transformers",
           "exllamav2", "mlx", "mlc", "tinychat", "gpt-fast"]
PRECISIONS = [None, "bf16", "fp16", "fp8", "int8", "awq", "gptq", "nf4", "q8_0", "q4_k_m", "q4_0", "q2_k",
              "iq4_xs", "mxfp4", "exl2-4.65", "q4f16_1", "mlx-4bit"]


def random_template(rng: random.Random) -> dict[str, Any]:
    w: dict[str, Any] = {"task": "inference"}
    for key, choices in (("precision", PRECISIONS), ("engine", ENGINES),
                         ("kv_cache_precision", [None, None, None, "fp8", "q8_0", "q4_0", "fp16"])):
        v = rng.choice(choices)
        if v is not None:
            w[key] = v
    if rng.random() < 0.15:
        w["engine_version"] = rng.choice(["0.6.4", "b2800", "4.38", "0.7.3", "0.6.1"])
    if rng.random() < 0.15:
        w["flash_attention"] = False
    if rng.random() < 0.15:
        w["gpu_layers"] = rng.randint(0, 90)
    if rng.random() < 0.15:
        w["gpu_memory_utilization"] = round(rng.uniform(0.5, 0.97), 2)
    if rng.random() < 0.1:
        w["max_model_len"] = rng.choice([2048, 8192, 32768])
    if rng.random() < 0.1:
        w["max_num_seqs"] = rng.choice([8, 64, 512])
    if rng.random() < 0.1:
        w["allow_long_context"] = True
    count = rng.choice([1, 1, 1, 2, 4, 8])
    hw: dict[str, Any] = {"gpu": rng.choice(GPUS), "count": count}
    if count > 1 and rng.random() < 0.4:
        hw[rng.choice(["tensor_parallel", "pipeline_parallel"])] = rng.choice([t for t in (1, 2, 4, 8) if t <= count])
    if rng.random() < 0.2:
        hw["host_ram_gib"] = rng.choice([16, 64, 512])
    if rng.random() < 0.2:
        hw["host_memory_bandwidth_gb_s"] = round(rng.uniform(30, 400), 1)
    return {"model": rng.choice(MODELS), "workload": w, "hardware": hw}


def random_training_template(rng: random.Random) -> dict[str, Any]:
    w: dict[str, Any] = {"task": rng.choice(["finetune", "pretrain"])}
    if rng.random() < 0.9:
        # no GGUF (q4_k_m): a training plan refuses it (workload.Plan._no_gguf_training); GPTQ bases train (QLoRA)
        w["precision"] = rng.choice(["bf16", "fp16", "fp32", "fp8", "bf16-mixed", "fp16-mixed", "gptq", "nf4"])
    if rng.random() < 0.5:
        w["engine"] = rng.choice(["hf", "torchtune", "deepspeed", "megatron", "axolotl", "unsloth"])
    if rng.random() < 0.15:
        w["flash_attention"] = False
    t: dict[str, Any] = {}
    for key, choices in (("method", ["full", "lora", "qlora"]), ("lora_rank", [4, 16, 64]),
                         ("optimizer", ["adamw", "adamw-8bit", "paged-adamw-8bit", "sgd", "lion", "adafactor",
                                        "adamw-bf16", "adamw-in-bwd", "adamw-foreach"]),
                         ("zero_stage", [0, 1, 2, 3]), ("offload", ["none", "optimizer", "params"]),
                         ("gradient_checkpointing", [True, False]), ("checkpointing", ["none", "selective", "full"]),
                         ("global_batch_tokens", [2**16, 2**20, 2**22]), ("activation_offload", [True]),
                         ("chunked_loss", [True, False]), ("sequence_parallel", [True]),
                         ("context_parallel", [2]), ("expert_parallel", [2, 4]),
                         ("fp8_dot_product_attention", [True]), ("enable_cuda_graph", [True, False]),
                         ("lora_targets", [["q", "v"], ["attention"], ["all-linear", "lm_head"]])):
        if rng.random() < 0.3:
            t[key] = rng.choice(choices)
    if "checkpointing" in t:
        t.pop("gradient_checkpointing", None)
    count, nodes = rng.choice([1, 1, 2, 4, 8]), rng.choice([1, 1, 1, 2, 4])
    hw: dict[str, Any] = {"gpu": rng.choice(GPUS), "count": count, "nodes": nodes}
    if count * nodes > 1 and rng.random() < 0.4:
        hw[rng.choice(["tensor_parallel", "pipeline_parallel"])] = rng.choice(
            [x for x in (1, 2, 4, 8) if x <= count * nodes])
    for key, choices in (("host_ram_gib", [64, 512]), ("power_limit_w", [250.0, 300.0]),
                         ("interconnect", ["pcie4", "nvlink", "ib-ndr"])):
        if rng.random() < 0.15:
            hw[key] = rng.choice(choices)
    return {"model": rng.choice(MODELS), "workload": w, "training": t, "hardware": hw}


def random_configs(rng: random.Random, n: int) -> tuple[list[int], ...]:
    batch = [rng.choice([1, 1, 2, 4, 16, 64, 256, rng.randint(1, 2000)]) for _ in range(n)]
    context = [rng.choice([0, 512, 4096, 8192, 32768, 131072, 400_000, rng.randint(1, 200_000)]) for _ in range(n)]
    prompt = [rng.choice([0, 1, 128, 512, 2000, rng.randint(1, 100_000)]) for _ in range(n)]
    output = [rng.choice([0, 1, 128, 1000, rng.randint(1, 8000)]) for _ in range(n)]
    for i in range(n):  # most requests fit their context; the rest are refused (WorkloadSpec._request_fits_context)
        if 0 < context[i] < prompt[i] + output[i] and rng.random() < 0.75:
            context[i] = prompt[i] + output[i] + rng.choice([0, 1, 1000])
    return batch, context, prompt, output


def _evaluated_at(base: Plan, batch: int, context: int, prompt: int, output: int) -> PlanResult:
    """`evaluate_case` of `base` at these numbers, or the error line of a plan it refuses to be (a prompt and
    output longer than the context: `WorkloadSpec._request_fits_context`)."""
    try:
        plan = _plan_at(base, batch, context, prompt, output)
    except MlrigError as exc:
        return PlanResult(error=str(exc))
    return evaluate_case(plan)


def test_a_request_longer_than_its_context_is_its_own_error_line() -> None:
    """`--context 8k --prompt 16k` was priced as two requests (memory at 8k, speed at 16k): the array path
    refuses that configuration with `plan`'s line and evaluates the others."""
    base = parse_plan({"model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"}})
    grid = evaluate_grid(base, [1, 1, 1], [8192, 8192, 0], [16384, 8000, 16384], [128, 128, 128])
    with pytest.raises(MlrigError) as refused:
        parse_plan({"model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"},
                    "workload": {"context_tokens": 8192, "prompt_tokens": 16384, "output_tokens": 128}})
    assert grid.error[0] == str(refused.value) and "16,384" in grid.error[0] and "8,192" in grid.error[0]
    assert grid.error[1] is None and grid.error[2] is None and grid.per_gpu_gib[1] > 0
    lines = [{"model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"},
              "workload": {"context_tokens": c, "prompt_tokens": 16384, "output_tokens": 128}} for c in (8192, 32768)]
    bad, good = evaluate_cases(lines)  # `mlrig eval`: the bad line reports, the rest is evaluated
    assert bad.error == str(refused.value) and good.error is None and good.memory is not None


def same(a: float | None, b: float) -> bool:
    """`evaluate`'s figure (None when absent) against the grid's (NaN when absent): identical bits."""
    return math.isnan(b) if a is None else a == b


@pytest.mark.parametrize("seed", range(6))
def test_the_array_path_equals_evaluate_exactly(seed: int) -> None:
    rng = random.Random(1000 + seed)
    checked = errors = 0
    for _ in range(40):
        base = parse_plan(random_template(rng))
        batch, context, prompt, output = random_configs(rng, 6)
        try:
            grid = evaluate_grid(base, batch, context, prompt, output)
        except Exception as exc:  # only an unknown model or GPU may fail the whole grid
            pytest.fail(f"evaluate_grid raised {exc!r} for {base.model_dump(exclude_unset=True)}")
        for i in range(len(batch)):
            one = _evaluated_at(base, batch[i], context[i], prompt[i], output[i])
            where = (base.model_dump(exclude_unset=True), batch[i], context[i], prompt[i], output[i])
            assert grid.error[i] == one.error, where
            if one.error:
                errors += 1
                continue
            assert one.memory is not None
            assert grid.fits[i] == one.fits, where
            assert grid.per_gpu_gib[i] == one.memory.per_gpu_gib, where
            assert grid.gpu_capacity_gib[i] == one.memory.gpu_capacity_gib, where
            cap = one.kv_cache_capacity_tokens
            assert same(None if cap is None else float(cap), grid.kv_cache_capacity_tokens[i]), where
            assert grid.engine[i] == one.engine, where
            perf = one.performance
            for k in FIGURES:
                assert same(None if perf is None else getattr(perf, k), getattr(grid, k)[i]), (k, where)
            assert grid.bound[i] == (None if perf is None else perf.bound), where
            checked += 1
    assert checked > 100 and errors > 0  # both kinds were exercised


def test_the_array_path_runs_no_plan_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Valid static-inference configurations never reach `evaluate` (the one-by-one fallback)."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("evaluate called")

    monkeypatch.setattr(planner, "evaluate", refuse)
    batch = np.arange(1, 501) % 64 + 1
    n = len(batch)
    grid = evaluate_grid({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m", "engine": "llama.cpp"},
                          "hardware": {"gpu": "rtx-4090"}},
                         batch, np.full(n, 8192), np.full(n, 4000), np.full(n, 256))
    assert all(e is None for e in grid.error) and np.isfinite(grid.decode_tok_s).all()
    # a dense model's decode step never gets cheaper with more sequences: per-sequence speed falls with batch
    order = np.argsort(batch, kind="stable")
    assert (np.diff(grid.decode_tok_s[order]) <= 0).all() and grid.decode_tok_s[order][-1] < grid.decode_tok_s[order][0]


def test_a_context_beyond_the_model_is_the_planners_error() -> None:
    grid = evaluate_grid({"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm-80gb"}},
                         [1, 1], [8192, 1_000_000], [512, 512], [128, 128])
    assert grid.error[0] is None and grid.error[1] is not None and "exceeds" in grid.error[1]


@pytest.mark.parametrize("seed", range(6))
def test_the_training_array_path_equals_evaluate_exactly(seed: int) -> None:
    rng = random.Random(2000 + seed)
    checked = 0
    for _ in range(40):
        try:
            base = parse_plan(random_training_template(rng))
        except MlrigError:
            continue  # a layout the plan format itself refuses (more parallel ranks than GPUs)
        batch = [rng.choice([1, 1, 2, 4, 8, 32, rng.randint(1, 200)]) for _ in range(6)]
        seq = [rng.choice([0, 512, 2048, 4096, 8192, 32768, rng.randint(1, 100_000)]) for _ in range(6)]
        grid = evaluate_grid(base, batch, seq, [0] * 6, [0] * 6)
        for i in range(6):
            one = evaluate_case(_plan_at(base, batch[i], seq[i], 0, 0))
            where = (base.model_dump(exclude_unset=True), batch[i], seq[i])
            assert grid.error[i] == one.error, where
            if one.error:
                continue
            assert one.memory is not None and one.performance is not None
            assert grid.fits[i] == one.fits and grid.per_gpu_gib[i] == one.memory.per_gpu_gib, where
            for k in TRAINING_FIGURES:
                assert grid_value(grid, k, i) == getattr(one.performance, k), (k, where)
            assert grid.bound[i] == one.performance.bound and grid.engine[i] is None, where
            checked += 1
    assert checked > 100


def test_a_layout_the_planner_refuses_is_its_error_on_every_row() -> None:
    """gpt2's 12 heads do not split over 8 tensor-parallel ranks: each row carries evaluate's line."""
    base = parse_plan({"model": "gpt2", "workload": {"task": "finetune"},
                       "hardware": {"gpu": "h100-sxm-80gb", "count": 8, "tensor_parallel": 8}})
    grid = evaluate_grid(base, [1, 2], [512, 1024], [0, 0], [0, 0])
    expected = evaluate_case(_plan_at(base, 1, 512, 0, 0)).error
    assert expected and "tensor_parallel 8" in expected and list(grid.error) == [expected, expected]


def grid_value(grid: Any, k: str, i: int) -> float:
    return float(getattr(grid, k)[i])


def random_case_file(rng: random.Random, shapes: int) -> list[Any]:
    """What a batch file holds: plans in shapes of 1-24 (random numbers on one template, some left to
    their defaults; training plans also random sequence lengths), serving plans, bad values,
    non-objects; shuffled."""
    cases: list[Any] = []
    for _ in range(shapes):
        pick = rng.random()
        template = random_training_template(rng) if pick < 0.3 else random_template(rng)
        if 0.3 <= pick < 0.35:
            template["workload"]["load"] = "concurrency"
        batch, context, prompt, output = random_configs(rng, rng.choice([1, 3, 8, 16, 24]))
        for values in zip(batch, context, prompt, output, strict=True):
            case = json.loads(json.dumps(template))
            for key, v in zip(("batch_size", "context_tokens", "prompt_tokens", "output_tokens"), values, strict=True):
                if (key == "context_tokens" and v == 0) or rng.random() < 0.1:
                    continue  # left to the default
                case["workload"][key] = v if rng.random() > 0.01 else rng.choice([-1, "x", 1.5, None])
            if "training" in case and rng.random() < 0.7:
                case["training"]["seq_len"] = rng.choice([512, 2048, 8192, rng.randint(1, 70_000)])
            if rng.random() < 0.5:
                case["id"] = rng.choice([f"c{len(cases)}", len(cases)])
            cases.append(case)
    cases += [None, 3, [], {}, {"model": "no-such-model"}, {"model": "llama-3.1-8b", "workload": {"batch_size": 0}}]
    rng.shuffle(cases)
    return cases


@pytest.mark.parametrize("seed", range(4))
def test_many_whole_plans_equal_evaluate_case_exactly(seed: int) -> None:
    """`grid.evaluate_cases` (what `mlrig eval` runs) gives each case the result `evaluate_case` gives it
    alone: every field, notes, explanation and validation included."""
    cases = random_case_file(random.Random(3000 + seed), 60)
    together = evaluate_cases(cases)
    assert len(together) == len(cases)
    for case, result in zip(cases, together, strict=True):
        alone = evaluate_case(json.loads(json.dumps(case)))
        assert result.model_dump(mode="json") == alone.model_dump(mode="json"), case


def test_plans_of_one_shape_take_one_array_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of one plan over many batches and contexts never evaluates a plan one by one, and the
    results still carry each plan's own figures and notes."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("evaluate called")

    cases = [{"id": f"{b}-{c}", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"},
              "workload": {"precision": "q4_k_m", "batch_size": b, "context_tokens": c}}
             for b in (2, 4, 8, 16) for c in (4096, 32768, 131072)]
    expected = [evaluate_case(c) for c in cases]
    monkeypatch.setattr(planner, "evaluate", refuse)
    results = evaluate_cases(cases)
    assert [r.model_dump() for r in results] == [e.model_dump() for e in expected]
    assert [r.id for r in results] == [c["id"] for c in cases]
    kv = [r.memory.kv_cache_gib for r in results if r.memory]
    assert kv[0] < kv[1] < kv[2]  # more context, more KV cache



@pytest.mark.parametrize("seed", range(2))
def test_eval_lines_are_the_rounded_dumps_of_the_results(seed: int) -> None:
    """`mlrig eval`'s line for each plan (`batch.encoded_chunk`: shared validation entries dumped and
    rounded once, the rest as it is) is byte for byte the rounded dump of `evaluate_case`'s result
    (`round_floats` of `model_dump`, in field order), with the id as given (a number unrounded)."""
    from mlrig.batch import encode_line, encoded_chunk
    from mlrig.jsonout import round_floats

    cases = [c for c in random_case_file(random.Random(4000 + seed), 40) if isinstance(c, dict)]
    cases.append({"id": 1.23456789, "model": "gpt2", "workload": {"prompt_tokens": 100}})
    lines, _ = encoded_chunk([(n, json.dumps(c).encode()) for n, c in enumerate(cases, 1)])
    assert len(lines) == len(cases)
    for line, case in zip(lines, cases, strict=True):
        case_id = case.get("id")
        plan = case if case_id is None or isinstance(case_id, str) else {k: v for k, v in case.items() if k != "id"}
        result = evaluate_case(json.loads(json.dumps(plan)))
        assert line == encode_line({**round_floats(result.model_dump(mode="json")), "id": case_id}), case
    assert b'"id":1.23456789,' in lines[-1] and b'"validation":{"' in lines[-1]


def test_rounded_dump_is_the_rounded_model_dump() -> None:
    """`jsonout.rounded_dump` (what `mlrig eval` writes) equals `round_floats(model_dump(mode="json"))`
    once encoded, for a training result (nested TrainingRun), an inference one, and one whose floats
    hold NaN and infinities (the dump writes null, and so must the walk's encoding); a frozen
    validation entry is walked once and a different entry with the same fields gets its own dump."""
    from mlrig.batch import encode_line
    from mlrig.jsonout import round_floats, rounded_dump
    from mlrig.planner import evaluate
    from mlrig.results import FigureValidation

    training = evaluate({"model": "llama-3.2-1b", "hardware": {"gpu": "h100-sxm-80gb"},
                         "workload": {"task": "finetune", "batch_size": 2}, "training": {"method": "lora"}})
    inference = evaluate({"model": "qwen2.5-7b", "hardware": {"gpu": "rtx-4090"},
                          "workload": {"precision": "q4_k_m", "batch_size": 3}})
    assert training.training is not None and inference.performance is not None
    odd = inference.model_copy(deep=True)
    assert odd.performance is not None and odd.memory is not None
    odd.performance.decode_tok_s = math.nan
    odd.performance.ttft_ms = math.inf
    odd.memory.per_gpu_gib = -math.inf
    odd.performance.error_band["tpot_ms"] = math.nan
    for result in (training, inference, odd):
        assert encode_line(rounded_dump(result)) == encode_line(round_floats(result.model_dump(mode="json")))
    assert b'"decode_tok_s":null,"ttft_ms":null' in encode_line(rounded_dump(odd))
    entry = FigureValidation(validated=True, scope="x", rows=3, median_error=0.123456, p90_error=0.2)
    assert rounded_dump(entry) is rounded_dump(entry)
    other = FigureValidation(validated=False, scope="y")
    assert rounded_dump(other) == round_floats(other.model_dump(mode="json")) != rounded_dump(entry)


def test_plan_scope_memo_answers_as_the_rule_does() -> None:
    """`scopes.plan_scope` is worked out once per (method, engine, precision, GPU class and memory
    type): for random plans, in any order, it answers what `_plan_scope` works out afresh."""
    from mlrig.planner import prepare, resolve_arch, resolve_hardware
    from mlrig.validation.scopes import _plan_scope, plan_scope

    rng = random.Random(11)
    for _ in range(150):
        template = random_training_template(rng) if rng.random() < 0.3 else random_template(rng)
        try:
            p = parse_plan(template)
            gpu = resolve_hardware(p)
            p, _ = prepare(p, resolve_arch(p), gpu)
            fresh = _plan_scope(p, gpu)
        except MlrigError:
            continue
        assert plan_scope(p, gpu) == fresh == plan_scope(p, gpu), template


@pytest.mark.parametrize("seed", range(3))
def test_a_member_of_a_shape_parses_as_parse_plan_does(seed: int) -> None:
    """`grid.parse_member` (a plan of the shape of one already validated: only its id, workload and
    training validated again) gives what `parse_plan` gives the case alone: the same plan, the same
    fields given in each section, or the same one-line error; odd ids and numbers included."""
    from mlrig.grid import _shape_key, parse_member

    rng = random.Random(5000 + seed)
    cases = [c for c in random_case_file(rng, 80) if isinstance(c, dict)]
    for c in cases[::7]:  # ids and sections parse_plan refuses
        c["id"] = rng.choice(["", "  ", "x" * 1001, 7, None, "ok"])
    for c in cases[::11]:
        c.pop("workload", None) if rng.random() < 0.5 else c.update(training=None)
    groups: dict[Any, list[dict[str, Any]]] = {}
    for c in cases:
        key = _shape_key(c)
        if key is not None:
            groups.setdefault(key, []).append(c)

    def outcome(parse: Any) -> Any:
        try:
            p = parse()
        except MlrigError as exc:
            return str(exc)
        return (p.model_dump(), p.workload.model_fields_set, p.hardware.model_fields_set, p.model.model_fields_set,
                p.training.model_fields_set if p.training else None)

    checked = 0
    for members in groups.values():
        valid = [c for c in members if not isinstance(outcome(lambda c=c: parse_plan(c)), str)]
        if not valid:
            continue
        base = parse_plan(valid[0])
        for c in members:
            assert outcome(lambda c=c, b=base: parse_member(c, b)) == outcome(lambda c=c: parse_plan(c)), c
            checked += 1
    assert checked > 50


def test_a_plan_its_group_refuses_is_not_evaluated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan of a group that `check_setup` refuses (a context beyond the model's maximum) gets the
    planner's line from the group's own check, not from a second trip through `evaluate`."""
    cases = [{"id": f"c{c}-{b}", "model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm-80gb"},
              "workload": {"batch_size": b, "context_tokens": c}}
             for b in (2, 4) for c in (4096, 131072, 200_000, 1_000_000)]
    cases.append({"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm-80gb"},
                  "workload": {"batch_size": 8, "context_tokens": 300_000}})  # no id
    expected = [evaluate_case(c).model_dump() for c in cases]
    assert sum(e["error"] is not None for e in expected) == 5

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("evaluate called")

    monkeypatch.setattr(planner, "evaluate", refuse)
    assert [r.model_dump() for r in evaluate_cases(cases)] == expected


def test_a_group_refused_as_a_whole_resolves_its_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans of one shape that the planner refuses as a whole (vLLM on Apple silicon) each get
    `evaluate_case`'s line, without resolving the model and GPU again for every plan."""
    cases = [{"id": f"v{b}", "model": "llama-3.1-8b", "hardware": {"gpu": "apple-m2-ultra-76c-192gb"},
              "workload": {"engine": "vllm", "batch_size": b, "context_tokens": 4096}} for b in range(2, 10)]
    expected = [evaluate_case(c).model_dump() for c in cases]
    assert all(e["error"] and "vllm" in e["error"] for e in expected)
    calls = []
    resolve_arch = planner.resolve_arch
    monkeypatch.setattr(planner, "resolve_arch", lambda p: calls.append(p) or resolve_arch(p))
    assert [r.model_dump() for r in evaluate_cases(cases)] == expected
    assert len(calls) == 1


@pytest.mark.parametrize("engine", ["vllm", "llama.cpp", None])
def test_one_sequence_and_batches_share_one_array_pass_when_their_defaults_agree(
        engine: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans of one shape over batch 1 and larger batches take one array pass when the planner fills
    them in alike (an engine given, or the default the same for both), and each result is still
    `evaluate_case`'s."""
    from mlrig.estimators import performance

    w = {"precision": "q4_k_m", **({"engine": engine} if engine else {})}
    cases = [{"id": f"{b}-{c}", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"},
              "workload": {**w, "batch_size": b, "context_tokens": c}} for b in (1, 2, 8) for c in (4096, 8192)]
    expected = [evaluate_case(c).model_dump() for c in cases]
    calls = []
    static_inference = performance.static_inference
    monkeypatch.setattr(performance, "static_inference", lambda *a, **k: calls.append(a) or static_inference(*a, **k))
    assert [r.model_dump() for r in evaluate_cases(cases)] == expected
    assert len(calls) == 1


def test_batch_classes_whose_default_engines_differ_stay_apart() -> None:
    """A consumer AMD card runs one sequence on llama.cpp and batches on vLLM by default: the two
    classes are prepared apart, and each plan gets its own engine."""
    from mlrig.grid import _batch_classes
    from mlrig.planner import resolve_arch, resolve_hardware

    cases = [{"id": f"b{b}", "model": "llama-3.1-8b", "hardware": {"gpu": "rx-7900-xtx"},
              "workload": {"batch_size": b, "context_tokens": 4096}} for b in (1, 1, 1, 1, 2, 4, 8, 16)]
    plans = {i: parse_plan(c) for i, c in enumerate(cases)}
    assert _batch_classes(plans, resolve_arch(plans[0]), resolve_hardware(plans[0])) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    results = evaluate_cases(cases)
    assert [r.engine for r in results] == ["llama.cpp"] * 4 + ["vllm"] * 4
    assert [r.model_dump() for r in results] == [evaluate_case(c).model_dump() for c in cases]


def test_elements_gives_each_configuration_as_the_scalar_call_would() -> None:
    """`grid.elements` splits an array pass's figures into one dataclass per configuration: a field
    that is one value for all (a Python or numpy scalar) is that value in each, an array's element is
    a Python number (or the object held), nested dataclasses likewise; fields stay in declaration
    order, and each element equals the dataclass built field by field through its __init__."""
    import dataclasses

    from mlrig.grid import elements

    @dataclasses.dataclass(frozen=True)
    class Inner:
        seconds: Any
        bound: Any
        note: Any

    @dataclasses.dataclass(frozen=True)
    class Outer:
        a: Any
        b: Any
        c: Any
        inner: Any
        d: Any
        e: Any

    n = 4
    figures = Outer(a=np.arange(n) * 1.5, b=2.5, c=np.float64(3.25),
                    inner=Inner(seconds=np.array([0.1, 0.2, 0.3, 0.4]), bound=np.array("compute", object),
                                note=None),
                    d=np.array([True, False, True, False]), e=np.array([7]))
    rows = elements(figures, n)
    for i, row in enumerate(rows):
        want = Outer(a=[0.0, 1.5, 3.0, 4.5][i], b=2.5, c=3.25,
                     inner=Inner(seconds=[0.1, 0.2, 0.3, 0.4][i], bound="compute", note=None),
                     d=[True, False, True, False][i], e=7)
        assert row == want and list(vars(row)) == [f.name for f in dataclasses.fields(Outer)]
        assert type(row.c) is float and type(row.a) is float and type(row.d) is bool and type(row.e) is int
    assert elements(Outer(a=1.0, b=2.0, c=3.0, inner=Inner(1.0, "x", None), d=True, e=0), 3) == \
        [Outer(a=1.0, b=2.0, c=3.0, inner=Inner(1.0, "x", None), d=True, e=0)] * 3


def test_plans_evaluated_one_by_one_resolve_a_setup_once_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans a chunk evaluates one by one (shapes met fewer than MIN_GROUP times, serving loads: what a
    shuffled file holds) resolve each model and GPU once per chunk, and each still gets `evaluate_case`'s
    result: errors, ids and notes included."""
    cases: list[Any] = [
        {"id": "a", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"}, "workload": {"precision": "q4_k_m"}},
        {"id": "b", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"}, "workload": {"engine": "vllm"}},
        {"id": "c", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"},
         "workload": {"load": "concurrency", "batch_size": 8, "engine": "vllm"}},
        {"id": "d", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"},
         "workload": {"task": "finetune", "batch_size": 2}, "training": {"method": "qlora"}},
        {"id": "e", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"}, "workload": {"context_tokens": 10**6}},
        {"id": "f", "model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm-80gb"}},
        {"id": "g", "model": "no-such-model", "hardware": {"gpu": "rtx-4090"}},
        {"id": 7, "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"}, "workload": {"batch_size": 0}},
        "not a plan",
    ]
    expected = [evaluate_case(json.loads(json.dumps(c))).model_dump() for c in cases]
    assert expected[4]["error"] and expected[6]["error"] and expected[7]["error"] and expected[8]["error"]
    calls = []
    resolve_arch = planner.resolve_arch
    monkeypatch.setattr(planner, "resolve_arch", lambda p: calls.append(p.model.name) or resolve_arch(p))
    assert [r.model_dump() for r in evaluate_cases(cases)] == expected
    # once per (model, hardware): the rtx-4090 plans and the h100 one; the unknown model once more, whole
    assert sorted(calls) == ["llama-3.1-8b", "llama-3.1-8b", "no-such-model", "no-such-model"]


def test_copy_with_is_model_copy() -> None:
    """`grid.copy_with` builds what pydantic's `model_copy(update=...)` builds: equal fields, the same
    fields set (what `exclude_unset` dumps read), a new object, the original untouched."""
    from mlrig.grid import copy_with
    from mlrig.workload import TrainingSpec

    plan = parse_plan({"id": "a", "model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"},
                       "workload": {"precision": "q4_k_m", "batch_size": 4, "context_tokens": 4096}})
    for model, update in ((plan, {"id": "b", "training": TrainingSpec(method="lora")}),
                          (plan.workload, {"batch_size": 8, "prompt_tokens": 17}),
                          (plan.hardware, {})):
        before = model.model_dump()
        want, got = model.model_copy(update=update), copy_with(model, update)
        assert got == want and got is not model and type(got) is type(want)
        assert got.model_fields_set == want.model_fields_set
        assert got.model_dump(exclude_unset=True) == want.model_dump(exclude_unset=True)
        assert model.model_dump() == before
    assert copy_with(plan.workload, {"batch_size": 8}).batch_size == 8 != plan.workload.batch_size


def test_a_repeated_section_parses_as_it_did_the_first_time() -> None:
    """`grid.parse_member` validates a workload or training section once per spelling and copies it:
    the second line giving a section gets what parse_plan gives it (the same plan, the same fields set,
    its own object), spellings JSON tells apart (1, 1.0, true; a float and its neighbour) stay apart,
    and a bad section gives its error on every line that repeats it."""
    from mlrig.grid import parse_member

    head = {"model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090"}}
    first = parse_plan({**head, "workload": {"precision": "q4_k_m", "context_tokens": 4096}})
    sections = [{"precision": "q4_k_m", "context_tokens": 4096, "batch_size": 2},
                {"precision": "q4_k_m", "context_tokens": 4096, "batch_size": 2.0},
                {"precision": "q4_k_m", "context_tokens": 4096, "batch_size": True},
                {"precision": "q4_k_m", "context_tokens": 4096, "gpu_memory_utilization": 0.9},
                {"precision": "q4_k_m", "context_tokens": 4096, "gpu_memory_utilization": 0.9000000000000001},
                {"precision": "q4_k_m", "context_tokens": 4096, "gpu_memory_utilization": float("nan")},
                {"precision": "q4_k_m", "context_tokens": 4096, "engine": None},
                {"precision": "q4_k_m", "context_tokens": 4096, "batch_size": 0},
                {"precision": "q4_k_m", "prompt_tokens": 10, "cached_prompt_tokens": 10}]
    trainings = [{"method": "lora", "seq_len": 512}, {"method": "qlora", "lora_rank": -1}]
    cases = [{**head, "workload": w} for w in sections]
    cases += [{**head, "workload": {"task": "finetune"}, "training": t} for t in trainings]

    def outcome(parse: Any) -> Any:
        try:
            p = parse()
        except MlrigError as exc:
            return str(exc)
        return p.model_dump(), p.workload.model_fields_set, p.training.model_fields_set if p.training else None

    errors = 0
    for case in cases:
        want = outcome(lambda c=case: parse_plan(c))
        errors += isinstance(want, str)
        got = [outcome(lambda c=case: parse_member(c, first)) for _ in range(3)]
        assert got == [want] * 3, case
    assert errors >= 4
    c = cases[0]
    assert parse_member(c, first).workload is not parse_member(c, first).workload
