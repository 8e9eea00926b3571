"""Many plans at once: one plan's model, GPU, precision, engine and parallel layout over arrays of batch
sizes, contexts, prompts and outputs (issue 15; `mlrig sweep`).

The figures come from the same formulas `mlrig plan` runs (static inference: `memory.inference_memory`,
`performance.static_inference`; training: `memory.training_memory`, `training_speed.training_speed`),
called once with numpy arrays instead of once per configuration, so each configuration's figures equal
`mlrig.planner.evaluate`'s exactly (tests/test_batch.py draws random plans to check). For training the
batch is the micro-batch and the context the sequence length (`training.seq_len`); prompt and output
are not used. What the array path does not cover goes through `evaluate` one configuration at a time,
with the same result: serving loads, contexts beyond the model's maximum (an error that names the
context), and setups the planner refuses as a whole (its one-line error).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from mlrig import vec
from mlrig.errors import MlrigError
from mlrig.units import GiB

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.models import ModelArch
    from mlrig.estimators.memory import MemoryEstimate
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.results import PlanResult
    from mlrig.workload import Plan

M = TypeVar("M", bound="BaseModel")
FIGURES = ("prefill_tok_s", "decode_tok_s", "ttft_ms", "tpot_ms", "throughput_tok_s")
TRAINING_FIGURES = ("train_tokens_per_s", "step_time_s", "mfu")


@dataclass
class Grid:
    """Per-configuration results, index-aligned with the inputs. `error[i]` is the planner's one-line error
    (the other fields then hold NaN / None); a figure is NaN where a serving engine would refuse to start."""

    engine: np.ndarray  # object: the engine the plan runs (None on an error)
    fits: np.ndarray  # bool
    per_gpu_gib: np.ndarray
    gpu_capacity_gib: np.ndarray
    kv_cache_capacity_tokens: np.ndarray  # float: NaN where the engine has none
    prefill_tok_s: np.ndarray
    decode_tok_s: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    throughput_tok_s: np.ndarray
    train_tokens_per_s: np.ndarray
    step_time_s: np.ndarray
    mfu: np.ndarray
    bound: np.ndarray  # object: "compute" | "memory-bandwidth" | "interconnect" | "offload" | "host"; None: no speed
    error: np.ndarray  # object: None, or the planner's one-line error

    @classmethod
    def empty(cls, n: int) -> Grid:
        nan = np.full(n, np.nan)
        return cls(engine=np.full(n, None, object), fits=np.zeros(n, bool), per_gpu_gib=nan.copy(),
                   gpu_capacity_gib=nan.copy(),
                   kv_cache_capacity_tokens=nan.copy(), prefill_tok_s=nan.copy(), decode_tok_s=nan.copy(),
                   ttft_ms=nan.copy(), tpot_ms=nan.copy(), throughput_tok_s=nan.copy(),
                   train_tokens_per_s=nan.copy(), step_time_s=nan.copy(), mfu=nan.copy(),
                   bound=np.full(n, None, object), error=np.full(n, None, object))

    def put(self, i: int, result: PlanResult) -> None:
        """Store one `evaluate` result at index i."""
        self.error[i] = result.error
        self.engine[i] = result.engine
        if result.memory is not None:
            self.fits[i] = bool(result.fits)
            self.per_gpu_gib[i] = result.memory.per_gpu_gib
            self.gpu_capacity_gib[i] = result.memory.gpu_capacity_gib
        if result.kv_cache_capacity_tokens is not None:
            self.kv_cache_capacity_tokens[i] = result.kv_cache_capacity_tokens
        p = result.performance
        if p is not None:
            for k in (*FIGURES, *TRAINING_FIGURES):
                v = getattr(p, k)
                getattr(self, k)[i] = np.nan if v is None else v
            self.bound[i] = p.bound


def _plan_at(plan: Plan, batch: int, context: int, prompt: int, output: int) -> Plan:
    """`plan` with this configuration's numbers, validated as a plan file would be (the fields the user
    left unset stay unset: the planner's defaults look at them). Training: the micro-batch and seq_len."""
    from mlrig.planner import parse_plan

    data = plan.model_dump(exclude_unset=True)
    if plan.workload.task != "inference":
        data["workload"] = {**data.get("workload", {}), "batch_size": batch}
        data["training"] = {**data.get("training", {}), "seq_len": context or None}
    else:
        data["workload"] = {**data.get("workload", {}), "batch_size": batch, "context_tokens": context or None,
                            "prompt_tokens": prompt, "output_tokens": output}
    return parse_plan(data)


def evaluate_grid(plan: Plan | dict[str, Any], batch: Any, context_tokens: Any, prompt_tokens: Any,
                  output_tokens: Any, *, arch: ModelArch | None = None, gpu: GPU | None = None) -> Grid:
    """`evaluate` of `plan` with each (batch, context, prompt, output) in the arrays given (equal length;
    a context of 0 means prompt + output, as in a plan without context_tokens). Raises MlrigError only
    when the plan itself is invalid (an unknown model or GPU); configurations fail one by one."""
    from mlrig.planner import evaluate, parse_plan, resolve_arch, resolve_hardware

    base = parse_plan(plan)
    b, c, pr, out = (np.asarray(x, dtype=np.int64) for x in (batch, context_tokens, prompt_tokens, output_tokens))
    if not b.shape == c.shape == pr.shape == out.shape or b.ndim != 1:
        raise MlrigError("evaluate_grid: batch, context, prompt and output must be 1-D arrays of one length")
    n = len(b)
    arch = arch or resolve_arch(base)
    gpu = gpu or resolve_hardware(base)
    grid = Grid.empty(n)
    one_by_one = np.ones(n, bool)
    w = base.workload
    if w.task == "inference" and w.load == "static" and n:
        # the planner's context check (check_setup): beyond the model's maximum is an error naming the context
        held = np.where(c > 0, c, pr + np.maximum(0, out - 1))
        ctx_max = np.maximum(held, w.max_model_len or 0)
        limit = arch.max_position_embeddings
        in_range = np.ones(n, bool) if (not limit or w.allow_long_context) else ctx_max <= limit
        # the default engine may differ for one sequence and for a batch (planner.default_engine)
        for part in (b == 1, b > 1):
            # a request longer than its context is refused (WorkloadSpec._request_fits_context): one by one, for
            # that error on its own line
            fits_context = (c <= 0) | (pr + out <= c)
            idx = np.flatnonzero(part & in_range & fits_context & (b >= 1) & (pr >= 0) & (out >= 0))
            if len(idx):
                one_by_one[idx] = not _arrays(grid, idx, base, arch, gpu, b, c, pr, out)
    elif w.task != "inference" and n:
        idx = np.flatnonzero((b >= 1) & (c >= 0))
        if len(idx):
            one_by_one[idx] = not _training_arrays(grid, idx, base, arch, gpu, b, c)
    for i in np.flatnonzero(one_by_one).tolist():
        try:
            grid.put(i, evaluate(_plan_at(base, int(b[i]), int(c[i]), int(pr[i]), int(out[i])), arch=arch, gpu=gpu))
        except MlrigError as exc:
            grid.error[i] = str(exc)
    return grid


def _resolve_group(base: Plan, arch: ModelArch, gpu: GPU, batch: int, context: int, prompt: int,
                   output: int) -> ResolvedPlan:
    """The group's plan as `evaluate` sees it (one configuration stands for all): `planner.resolve_plan`
    (defaults, setup check, resolved once)."""
    from mlrig.planner import resolve_plan

    return resolve_plan(_plan_at(base, batch, context, prompt, output), arch=arch, gpu=gpu)[0]


def _gib(x: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Bytes -> GiB to 4 decimals, as the plan's memory breakdown reports them (memory._gib)."""
    return vec.round_to(np.broadcast_to(np.asarray(x, float), shape) / GiB, 4)


def _arrays(grid: Grid, idx: np.ndarray, base: Plan, arch: ModelArch, gpu: GPU, b: np.ndarray, c: np.ndarray,
            pr: np.ndarray, out: np.ndarray) -> bool:
    """Fill `grid` at `idx` through the array formulas; False (nothing filled) where the planner
    refuses the setup as a whole, so those configurations go one by one and get its exact error. A static
    batch that outgrows a paged engine's pool or max_num_seqs runs in waves here as in the planner
    (`kv_limit.static_waves`)."""
    from pydantic import ValidationError

    from mlrig.estimators.kv_limit import static_waves
    from mlrig.estimators.memory import PAGED_ENGINES, _engine_key, inference_memory
    from mlrig.estimators.performance import offload_fraction, static_inference

    i0 = int(idx[0])
    try:
        r = _resolve_group(base, arch, gpu, int(b[i0]), int(c[i0]), int(pr[i0]), int(out[i0]))
        if r.replicas > 1:  # data-parallel replicas split each batch (planner.resolve_plan): one by one
            return False
        bb, pp, oo = b[idx], pr[idx], out[idx]
        cc = np.where(c[idx] > 0, c[idx], np.maximum(1, pp + oo))  # WorkloadSpec.context
        m = inference_memory(r, bb, cc, pp, context_given=c[idx] > 0)
        shape = idx.shape
        fits = np.broadcast_to(np.asarray(m.fits, bool), shape)
        used_gib = _gib(m.used, shape)
        capacity = None
        if m.capacity_tokens is not None:
            cap = np.broadcast_to(np.asarray(m.capacity_tokens), shape)
            capacity = np.array([np.nan if v is None else v for v in cap.tolist()], float) \
                if cap.dtype == object else cap.astype(float)
        run = np.ones(shape, bool)
        if _engine_key(r) in PAGED_ENGINES:  # planner.engine_refusal: such a setup gets no speed
            assert capacity is not None
            run = fits & (capacity >= np.maximum(cc, r.workload.max_model_len or 0))
        weights_gib = _gib(m.weights, shape)
        off = offload_fraction(fits, m.cpu_share, used_gib, gpu.capacity_gib, weights_gib)
        f = static_inference(r, bb, pp, oo, off)
    except (MlrigError, ValidationError):
        return False
    figures = {k: np.where(run, np.broadcast_to(np.asarray(getattr(f, k), float), shape), np.nan) for k in FIGURES}
    engine = _engine_key(r)
    if capacity is not None and engine in PAGED_ENGINES:
        # a batch the engine cannot run at once runs in waves (kv_limit.static_waves, as the planner's
        # kv_limit.apply_static_waves); the pool as the planner reads it, whole tokens
        kv = np.trunc(np.nan_to_num(capacity, nan=0.0)).astype(np.int64)
        a = static_waves(r, engine, kv, bb, np.maximum(1, pp), np.maximum(0, oo), off)
        if a is not None:
            waves = run & (kv > 0) & np.broadcast_to(a.active, shape)
            for k, v in (("throughput_tok_s", a.throughput_tok_s), ("tpot_ms", a.tpot_ms),
                         ("decode_tok_s", a.decode_tok_s)):
                figures[k] = np.where(waves, np.broadcast_to(np.asarray(v, float), shape), figures[k])
            ttft = np.broadcast_to(np.asarray(a.ttft_s * 1e3, float), shape)
            figures["ttft_ms"] = np.where(waves & np.isfinite(ttft), ttft, figures["ttft_ms"])
    grid.fits[idx] = fits & run  # a setup its engine refuses to start does not fit (planner.result_of)
    grid.per_gpu_gib[idx] = used_gib
    grid.gpu_capacity_gib[idx] = gpu.capacity_gib
    if capacity is not None:
        grid.kv_cache_capacity_tokens[idx] = capacity
    for k in FIGURES:
        getattr(grid, k)[idx] = figures[k]
    grid.engine[idx] = r.workload.engine
    bound = np.array(np.broadcast_to(np.asarray(f.bound, object), idx.shape))
    bound[~run] = None
    grid.bound[idx] = bound
    return True


def _training_arrays(grid: Grid, idx: np.ndarray, base: Plan, arch: ModelArch, gpu: GPU, b: np.ndarray,
                     c: np.ndarray) -> bool:
    """`_arrays` for a training plan: memory and step time of each micro-batch and sequence length."""
    from pydantic import ValidationError

    from mlrig.estimators.memory import training_memory
    from mlrig.estimators.training_speed import training_speed
    from mlrig.planner import training_seq_len

    try:
        r = _resolve_group(base, arch, gpu, int(b[idx[0]]), int(c[idx[0]]), 0, 0)
        bb = b[idx]
        unset = _plan_at(base, 1, 0, 0, 0)  # 0: no seq_len, the planner's default (planner.training_seq_len)
        seq = np.where(c[idx] > 0, c[idx], training_seq_len(arch, unset))
        m = training_memory(r, bb, seq)
        f = training_speed(r, bb, seq)
    except (MlrigError, ValidationError):
        return False
    shape = idx.shape
    grid.fits[idx] = np.broadcast_to(np.asarray(m.fits, bool), shape)
    grid.per_gpu_gib[idx] = _gib(m.used, shape)
    grid.gpu_capacity_gib[idx] = gpu.capacity_gib
    for k, v in (("train_tokens_per_s", f.tokens_per_s), ("step_time_s", f.step_s), ("mfu", f.mfu)):
        getattr(grid, k)[idx] = np.broadcast_to(np.asarray(v, float), shape)
    grid.bound[idx] = np.broadcast_to(np.asarray(f.bound, object), shape)
    return True


# ---------------------------------------------------------------------------------------------
# many whole plans (`mlrig eval`)
# ---------------------------------------------------------------------------------------------

NUMBERS = ("batch_size", "context_tokens", "prompt_tokens", "output_tokens")
MIN_GROUP = 4  # fewer plans of one shape than this are cheaper one by one


def evaluate_cases(cases: list[Any]) -> list[PlanResult]:
    """`planner.evaluate_case` of each case (a plan's JSON object, or anything a line held), in order.
    Static-inference plans that differ only in batch, context, prompt and output (training plans: in
    micro-batch and sequence length) form a group: its plan is prepared and resolved once and its
    memory and speed figures come from one array pass, and each plan's notes, explanation and
    validation from the same one-plan code `evaluate` runs, so each result equals `evaluate_case`'s
    (tests/test_batch.py). What a group cannot take goes one by one."""
    results: list[PlanResult | None] = [None] * len(cases)
    groups: dict[bytes | str, list[int]] = {}
    setups: dict[bytes, tuple[ModelArch, GPU]] = {}
    for i, case in enumerate(cases):
        key = _shape_key(case)
        if key is None:
            results[i] = _evaluate_alone(case, setups)
        else:
            groups.setdefault(key, []).append(i)
    for idx in groups.values():
        if len(idx) >= MIN_GROUP:
            for i, result in zip(idx, _evaluate_group([cases[i] for i in idx], setups), strict=True):
                results[i] = result
        else:
            for i in idx:
                results[i] = _evaluate_alone(cases[i], setups)
    return [r for r in results if r is not None]


def _evaluate_alone(case: Any, setups: dict[bytes, tuple[ModelArch, GPU]]) -> PlanResult:
    """`evaluate_case(case)` for a plan evaluated one by one, its model and GPU resolved once per
    chunk (`_setup_of`: a shuffled file meets the same few setups on line after line). A case that
    does not parse, or whose model or GPU does not resolve, goes through evaluate_case whole, for its
    own line."""
    from mlrig.planner import evaluate_case, parse_plan

    if not isinstance(case, dict):
        return evaluate_case(case)
    try:
        plan = parse_plan(case)
        arch, gpu = _setup_of(case, plan, setups)
    except Exception:  # the plan is invalid, or its model or GPU does not resolve
        return evaluate_case(case)
    return evaluate_case(case, plan=plan, arch=arch, gpu=gpu)


def _setup_of(case: dict[str, Any], plan: Plan, setups: dict[bytes, tuple[ModelArch, GPU]]) -> tuple[ModelArch, GPU]:
    """`(resolve_arch(plan), resolve_hardware(plan))` for `plan`, parsed from `case`, resolved once per
    chunk (`setups`, keyed by the case's `model` and `hardware` as given: the plan's model depends on
    its `model` alone, its GPU on its `hardware` alone). Raises what they raise (or orjson's TypeError
    for sections it refuses)."""
    import orjson

    from mlrig.planner import resolve_arch, resolve_hardware

    key = orjson.dumps([case.get("model"), case.get("hardware")], option=orjson.OPT_SORT_KEYS)
    setup = setups.get(key)
    if setup is None:
        setup = setups[key] = (resolve_arch(plan), resolve_hardware(plan))
    return setup


def _shape_key(case: Any) -> bytes | str | None:
    """What a static-inference or training plan is apart from its numbers and id (canonical JSON); None
    for a case that goes one by one (not an object, a serving load). orjson writes it (~10x faster than
    the json module); it writes NaN and the infinities as null, so a key with a null in it is written
    by the json module instead, which refuses them (as str: never equal to an orjson key)."""
    import json

    import orjson

    if not isinstance(case, dict):
        return None
    w, t = case.get("workload", {}), case.get("training")
    if not isinstance(w, dict) or w.get("load", "static") != "static" or not isinstance(t, dict | None):
        return None
    shape = {k: v for k, v in case.items() if k != "id"}
    shape["workload"] = {k: v for k, v in w.items() if k not in NUMBERS}
    if t is not None:
        shape["training"] = {k: v for k, v in t.items() if k != "seq_len"}
    try:
        key = orjson.dumps(shape, option=orjson.OPT_SORT_KEYS)
        return key if b"null" not in key else json.dumps(shape, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # orjson.JSONEncodeError is a TypeError
        return None


def _evaluate_group(cases: list[Any], setups: dict[bytes, tuple[ModelArch, GPU]]) -> list[PlanResult]:
    """`evaluate_case` of plans of one shape (`_shape_key`). The plans are validated one by one; the
    model and GPU resolved once per chunk (`_setup_of`); each batch class (`_batch_classes`) prepared
    and resolved once, and its plans' figures worked out in one array pass."""
    from mlrig.planner import evaluate_case, parse_plan
    from mlrig.results import PlanResult

    out: list[PlanResult | str | None] = [None] * len(cases)
    plans: dict[int, Plan] = {}
    for i, case in enumerate(cases):
        try:
            plans[i] = parse_member(case, plans[next(iter(plans))]) if plans else parse_plan(case)
        except MlrigError:
            out[i] = evaluate_case(case)  # its own error line
    arch = gpu = None
    if plans:
        i0 = next(iter(plans))
        try:
            arch, gpu = _setup_of(cases[i0], plans[i0], setups)
        except Exception:  # each plan's own line (evaluate_case's: the planner's error, or an internal one)
            arch = gpu = None
    if arch is not None and gpu is not None:
        for idx in _batch_classes(plans, arch, gpu):
            if len(idx) >= MIN_GROUP:
                _fill_group(out, idx, [plans[i] for i in idx], arch, gpu)
    for i, result in enumerate(out):
        if isinstance(result, str):  # a plan `check_setup` refuses: evaluate_case's line for its error
            case_id = cases[i].get("id")
            out[i] = PlanResult(id=case_id if isinstance(case_id, str) else None, error=result)
        elif result is None:  # a plan the group could not take: one by one
            out[i] = evaluate_case(cases[i]) if arch is None or gpu is None else \
                evaluate_case(cases[i], plan=plans[i], arch=arch, gpu=gpu)
    return [r for r in out if isinstance(r, PlanResult)]


def _batch_classes(plans: dict[int, Plan], arch: ModelArch, gpu: GPU) -> list[list[int]]:
    """The plans (by index) that one array pass can take: `planner.prepare` may fill a plan in
    differently for one sequence and for several (`planner.default_engine`: a batched load may get
    another engine), so those are two classes, unless the two take the same defaults (an engine
    given, or the same one chosen for both): then all the plans are one class, prepared and resolved
    once, and one array pass works out their figures."""
    from mlrig.planner import prepare

    one = [i for i, p in plans.items() if p.workload.batch_size == 1]
    many = [i for i, p in plans.items() if p.workload.batch_size != 1]
    if not one or not many:
        return [one or many]
    a, b = plans[one[0]], plans[many[0]]
    try:
        pa, notes_a = prepare(a, arch, gpu)
        pb, notes_b = prepare(b, arch, gpu)
    except Exception:  # left to the classes (their plans go one by one, each with its own line)
        return [one, many]
    numbers = {k: getattr(pb.workload, k) for k in NUMBERS}
    if notes_a == notes_b and pa.model_copy(update={"id": pb.id, "workload": pa.workload.model_copy(update=numbers),
                                                    "training": pb.training}) == pb:
        return [sorted(one + many)]
    return [one, many]


def parse_member(case: dict[str, Any], first: Plan) -> Plan:
    """`planner.parse_plan(case)` for a case of the same shape (`_shape_key`) as a plan `first` already
    validated: the case differs from first's only in its id, the workload's numbers and training's
    seq_len, so it validates its id (as `Plan.id`), its workload (`WorkloadSpec`) and its training
    (`TrainingSpec`) as parse_plan would, and takes its model and hardware from first (the same
    sections, already validated; `Plan`'s own checks read only those and the training's layout). Any
    id or section that fails goes through parse_plan whole, which raises its one-line error."""
    from pydantic import ValidationError

    from mlrig.planner import parse_plan
    from mlrig.workload import TrainingSpec, WorkloadSpec

    case_id = case.get("id")
    if case_id is not None and not (type(case_id) is str and case_id.strip() and len(case_id) <= 1000):
        return parse_plan(case)
    try:
        w = _validated(WorkloadSpec, case.get("workload", {}))
        t = case.get("training")
        training = _validated(TrainingSpec, t) if t is not None else \
            TrainingSpec() if w.task != "inference" else None  # Plan._training_defaults
    except ValidationError:
        return parse_plan(case)
    hw = case.get("hardware")
    hw_ep = hw.get("expert_parallel", 1) if isinstance(hw, dict) else 1
    if (w.task == "inference" and training is not None and training.expert_parallel != 1) or (
            w.task != "inference" and hw_ep != 1):
        return parse_plan(case)  # expert_parallel given outside its section: Plan moves it (`_expert_parallel_home`)
    from mlrig.workload import shard_by_default

    member = copy_with(first, {"id": case_id, "workload": w, "training": training})
    shard_by_default(member)  # Plan._training_defaults' ZeRO default, which copy_with does not run
    return member


def _validated(cls: type[M], section: Any) -> M:
    """`cls.model_validate(section)`, validated once per section as given (its canonical JSON) and
    copied (`copy_with`) for every line that gives it again: a file that sweeps a design space repeats
    the same few workload and training sections (a precision, an engine, a grid of numbers) over every
    model and GPU. A section that fails is not remembered (each line gets its own error); one orjson
    cannot write, or with a null in it (NaN writes null too), is validated on its own."""
    import orjson

    try:
        key = orjson.dumps([cls.__name__, section], option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return cls.model_validate(section)
    if b"null" in key:
        return cls.model_validate(section)
    found = _SECTIONS.get(key)
    if found is None:
        if len(_SECTIONS) >= 4096:
            _SECTIONS.clear()
        found = _SECTIONS[key] = cls.model_validate(section)
    return copy_with(found, {})  # each line its own section, as model_validate gives it


# (section class name, section as given) as canonical JSON -> the validated section (`_validated`)
_SECTIONS: dict[bytes, Any] = {}


def _fill_group(out: list[PlanResult | str | None], idx: list[int], plans: list[Plan], arch: ModelArch,
                gpu: GPU) -> bool:
    """Fill `out` at `idx` with the results of `plans` (one shape, one batch class); False (nothing
    filled) where anything fails for the group as a whole, so its plans go one by one and each gets
    `evaluate_case`'s exact line. A plan `check_setup` refuses gets that error line (str): the first
    error `evaluate` would raise for it (its plan parsed, its model and GPU resolved and its defaults
    taken as the group's were; `resolve` worked for the group's precision and engine)."""
    try:
        with np.errstate(all="raise"):  # arithmetic one plan would fail on sends the group one by one
            if plans[0].workload.task == "inference":
                results = _static_results(plans, arch, gpu)
            else:
                results = _training_results(plans, arch, gpu)
    except Exception:  # whatever it is, evaluate_case gives each plan its own line
        return False
    for j, result in results.items():
        out[idx[j]] = result
    return True


def _static_results(plans: list[Plan], arch: ModelArch, gpu: GPU) -> dict[int, PlanResult | str]:
    """`_fill_group`'s results for static inference, by position in `plans`: the plan prepared
    (`planner.prepare`) and resolved once; memory (`memory.inference_memory`) and speed
    (`performance.static_inference`) in one array pass each; each plan's notes and explanation by
    `estimate_memory` and `planner.result_of` given its element of those arrays."""
    from mlrig.estimators.memory import estimate_memory, inference_memory
    from mlrig.estimators.performance import offload_of, static_inference
    from mlrig.estimators.replicas import serving_replicas
    from mlrig.estimators.resolved import resolve
    from mlrig.planner import check_setup, int8_gemm_note, mxfp8_gemm_note, prepare, result_of

    base, notes = prepare(plans[0], arch, gpu)
    gemm_notes = mxfp8_gemm_note(base, gpu) + int8_gemm_note(base, gpu)  # after check_setup's, as resolve_plan
    if serving_replicas(base) > 1:
        # data-parallel replicas split each plan's batch (planner.resolve_plan): the plans go one by one
        raise ValueError("replicas")
    r = resolve(arch, base, gpu)
    ws = [copy_with(base.workload, {k: getattr(p.workload, k) for k in NUMBERS}) for p in plans]
    batch, prompt, output, context = (np.array([getattr(w, k) for w in ws], np.int64)
                                      for k in ("batch_size", "prompt_tokens", "output_tokens", "context"))
    given = np.array([w.context_tokens is not None for w in ws], bool)
    m = elements(inference_memory(r, batch, context, prompt, context_given=given), len(plans))
    each: dict[int, tuple[ResolvedPlan, list[str], MemoryEstimate]] = {}
    refused: dict[int, PlanResult | str] = {}
    for j, (p, w) in enumerate(zip(plans, ws, strict=True)):
        q = copy_with(base, {"id": p.id, "workload": w, "training": p.training})  # as the line gave it
        try:
            checked = check_setup(arch, q)
        except MlrigError as exc:
            refused[j] = str(exc)
            continue
        rq = r.with_plan(q)
        each[j] = (rq, [*notes, *checked, *gemm_notes], estimate_memory(rq, m[j]))
    off = np.array([offload_of(each[j][2]) if j in each else 0.0 for j in range(len(plans))])
    f = elements(static_inference(r, batch, prompt, output, off), len(plans))
    return {**refused, **{j: result_of(rq, memory, plan_notes, f[j]) for j, (rq, plan_notes, memory) in each.items()}}


def _training_results(plans: list[Plan], arch: ModelArch, gpu: GPU) -> dict[int, PlanResult | str]:
    """`_static_results` for training plans: memory (`memory.training_memory`) and the step
    (`training_speed.training_speed`) of each micro-batch and sequence length in one array pass each."""
    from mlrig.estimators.memory import estimate_memory, training_memory
    from mlrig.estimators.resolved import resolve
    from mlrig.estimators.training_speed import training_speed
    from mlrig.planner import check_setup, prepare, result_of, with_seq_len

    base, notes = prepare(plans[0], arch, gpu)
    assert base.training is not None
    r = resolve(arch, base, gpu)
    variants = [copy_with(base, {
        "id": p.id, "workload": copy_with(base.workload, {k: getattr(p.workload, k) for k in NUMBERS}),
        "training": copy_with(base.training, {"seq_len": p.training.seq_len if p.training else None})})
        for p in plans]
    batch = np.array([q.workload.batch_size for q in variants], np.int64)
    checks: list[list[str] | str] = []
    for j, q in enumerate(variants):
        try:
            checks.append(check_setup(arch, q))  # before the length is filled in: it notes the default
        except MlrigError as exc:
            checks.append(str(exc))
        variants[j] = with_seq_len(arch, q)
    seq = np.array([(q.training.seq_len if q.training else None) or q.workload.context for q in variants], np.int64)
    m = elements(training_memory(r, batch, seq), len(plans))
    f = elements(training_speed(r, batch, seq), len(plans))
    results: dict[int, PlanResult | str] = {}
    for j, q in enumerate(variants):
        checked = checks[j]
        if isinstance(checked, str):
            results[j] = checked
            continue
        rq = r.with_plan(q)
        results[j] = result_of(rq, estimate_memory(rq, m[j]), [*notes, *checked], f[j])
    return results


def copy_with(model: M, update: dict[str, Any]) -> M:
    """`model.model_copy(update=update)` (pydantic 2: the fields' dict copied with `update` over it, not
    validated, the updated names added to the fields set) for a model without extra fields or private
    attributes (mlrig's plan models), ~40% faster: it skips model_copy's copies of what such a model
    does not have. `mlrig eval` makes about three variants of a plan per line; tests/test_batch.py
    checks the copy equals model_copy's."""
    if model.__pydantic_extra__ is not None or model.__pydantic_private__ is not None:
        return model.model_copy(update=update)
    new = object.__new__(type(model))
    object.__setattr__(new, "__dict__", {**model.__dict__, **update})
    object.__setattr__(new, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    object.__setattr__(new, "__pydantic_extra__", None)
    object.__setattr__(new, "__pydantic_private__", None)
    return new


def elements(figures: Any, n: int) -> list[Any]:
    """The n configurations of an array pass's figures (a dataclass of numbers and arrays), each as the
    one-plan call gives it: every array's element as a Python number (or the object it holds)."""
    import dataclasses

    def column(v: Any) -> list[Any]:
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return elements(v, n)
        if not isinstance(v, np.ndarray):
            return [v.item() if isinstance(v, np.generic) else v] * n
        values = (v if v.shape == (n,) else np.broadcast_to(v, (n,))).tolist()
        if v.dtype == object:
            values = [x.item() if isinstance(x, np.generic) else x for x in values]
        return values

    make: Any = type(figures)
    plain = _plain_fields(make)
    names = plain or tuple(f.name for f in dataclasses.fields(figures) if f.init)
    if plain is None:
        columns = [column(getattr(figures, name)) for name in names]
        return [make(**dict(zip(names, row, strict=True))) for row in zip(*columns, strict=True)]
    # every field in order, a value shared by all n (not an array: one Python value, as `column` gives
    # it n times) set once in `template`; the arrays' elements then replace their placeholders
    template: dict[str, Any] = {}
    varying: list[str] = []
    columns = []
    for name in names:
        v = getattr(figures, name)
        if isinstance(v, np.ndarray) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
            template[name] = None
            varying.append(name)
            columns.append(column(v))
        else:
            template[name] = v.item() if isinstance(v, np.generic) else v
    out = []
    new = object.__new__
    for row in (zip(*columns, strict=True) if columns else [()] * n):
        obj = new(make)
        values = obj.__dict__
        values.update(template)
        values.update(zip(varying, row, strict=True))
        out.append(obj)
    return out


@cache
def _plain_fields(cls: Any) -> tuple[str, ...] | None:
    """The fields of a dataclass that `elements` may set in an instance's __dict__ directly (the same
    object its __init__ builds, ~3x faster for a frozen one, whose __init__ sets each field through
    object.__setattr__): every field an __init__ argument, no __post_init__, no __slots__. None otherwise."""
    import dataclasses

    fields = dataclasses.fields(cls)
    if any(not f.init for f in fields) or hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        return None
    return tuple(f.name for f in fields)
