"""The planner: resolve a plan's model and GPU, run the estimators, assemble a PlanResult.

This is the one place that wires catalogs → estimators. It holds no formulas of its own.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from mlrig.catalog.gpus import GPU
from mlrig.catalog.models import ModelArch
from mlrig.errors import MlrigError
from mlrig.estimators.engines import llama_cpp_front_end, runs_llama_cpp
from mlrig.results import PlanResult
from mlrig.workload import Plan

if TYPE_CHECKING:
    from mlrig.estimators.memory import MemoryEstimate
    from mlrig.estimators.performance import StaticInference
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.estimators.training_speed import TrainingSpeed


def validation_message(exc: ValidationError, what: str = "plan") -> str:
    """One line from pydantic's error list: the field path, the problem, the value given."""
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"] if not str(x).startswith("function-"))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            hint = field_hint(loc) if what in ("plan", "input") else None
            mean = f"; did you mean {hint!r}?" if hint else ""
            parts.append(f"unknown field {loc!r}{mean} (see docs/PLAN-FORMAT.md for the field names)")
        elif err["type"] == "missing":
            parts.append(f"{loc} is required")
        else:
            given = err.get("input")
            shown = f" (got {given!r})" if not isinstance(given, dict | list) else ""
            parts.append(f"{loc}: {msg}{shown}" if loc else msg)
    more = f" (+{len(exc.errors()) - 3} more)" if len(exc.errors()) > 3 else ""
    return f"invalid {what}: " + "; ".join(parts) + more


# Names people bring from other tools (HF generate, vLLM / llama.cpp flags, training configs) for a plan's fields
_FIELD_SYNONYMS = {
    "gpus": "hardware.count", "num_gpus": "hardware.count", "n_gpus": "hardware.count", "gpu_count": "hardware.count",
    "context": "workload.context_tokens", "ctx": "workload.context_tokens", "ctx_size": "workload.context_tokens",
    "context_length": "workload.context_tokens", "max_context": "workload.context_tokens",
    "batch": "workload.batch_size", "prompt": "workload.prompt_tokens", "input_tokens": "workload.prompt_tokens",
    "output": "workload.output_tokens", "max_new_tokens": "workload.output_tokens",
    "max_tokens": "workload.output_tokens",
    "quant": "workload.precision", "quantization": "workload.precision", "dtype": "workload.precision",
    "tp": "hardware.tensor_parallel", "tensor_parallel_size": "hardware.tensor_parallel",
    "pp": "hardware.pipeline_parallel", "pipeline_parallel_size": "hardware.pipeline_parallel",
    "rank": "training.lora_rank", "lora_r": "training.lora_rank", "r": "training.lora_rank",
    "zero": "training.zero_stage", "seq_length": "training.seq_len", "max_seq_len": "training.seq_len",
    "max_seq_length": "training.seq_len", "sequence_len": "training.seq_len", "sequence_length": "training.seq_len",
}


def field_hint(loc: str) -> str | None:
    """The plan field an unknown one most likely meant, as a dotted path: 'workload.precison' ->
    'workload.precision' (a close spelling in its section), 'hardware.gpus' -> 'hardware.count' (a name from
    another tool), 'workload.method' -> 'training.method' (the right name in another section)."""
    import difflib

    from mlrig.workload import HardwareSpec, ModelRef, TrainingSpec, WorkloadSpec

    sections: dict[str, type[BaseModel]] = {"workload": WorkloadSpec, "training": TrainingSpec,
                                            "hardware": HardwareSpec, "model": ModelRef}
    *path, key = loc.split(".")
    key = key.lower().replace("-", "_")
    if key in _FIELD_SYNONYMS:
        return _FIELD_SYNONYMS[key]
    section = path[0] if len(path) == 1 and path[0] in sections else None
    if section is not None:
        close = difflib.get_close_matches(key, list(sections[section].model_fields), n=1, cutoff=0.75)
        if close:
            return f"{section}.{close[0]}"
    homes = [f"{name}.{key}" for name, spec in sections.items() if key in spec.model_fields and name != section]
    if homes:
        return homes[0]
    everywhere = [f"{name}.{f}" for name, spec in sections.items() for f in spec.model_fields]
    close = difflib.get_close_matches(key, [x.split(".")[1] for x in everywhere], n=1, cutoff=0.8)
    return next((x for x in everywhere if close and x.endswith("." + close[0])), None)


def parse_plan(data: Plan | dict[str, Any]) -> Plan:
    if isinstance(data, Plan):
        return data
    if not isinstance(data, dict):
        raise MlrigError(f"a plan must be a JSON object / TOML table, got {type(data).__name__}")
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        raise MlrigError(validation_message(exc)) from None
    check_engine_version(plan)
    return plan


def check_engine_version(plan: Plan) -> None:
    """Refuse an engine_version its engine's parser cannot read (`engines.engine_version_problem`): priced silently
    as the current release otherwise. Run by `parse_plan` and again by `with_defaults`, which every evaluation
    passes (a batch's plans of one shape are validated section by section, `grid.parse_member`)."""
    from mlrig.estimators.engines import engine_version_problem

    problem = engine_version_problem(plan.workload.engine, plan.workload.engine_version)
    if problem:
        raise MlrigError(f"invalid plan: workload: engine_version (--engine-version): {problem}")


def load_plan_file(path: str | Path) -> dict[str, Any]:
    """Read a plan from TOML or JSON (by extension; TOML otherwise): a regular file of at most 1 MB,
    read and parsed by `mlrig.userfiles` (every failure a one-line error naming the file)."""
    from mlrig.userfiles import parse_json, parse_toml, read_bytes

    p = Path(path)
    raw = read_bytes(p, "plan file", 1_000_000, "give the path to a .toml or .json plan")  # a few lines
    where = f"plan file {str(p)!r}"
    data = parse_json(raw, where, max_items=100_000) if p.suffix.lower() == ".json" else parse_toml(raw, where)
    if not isinstance(data, dict):
        raise MlrigError(f"{where} must hold one plan object")
    return data


def resolve_arch(plan: Plan) -> ModelArch:
    from mlrig.catalog.models import arch_from_ref, resolve_model

    if plan.model.is_explicit:
        return arch_from_ref(plan.model)
    assert plan.model.name is not None
    return resolve_model(plan.model.name)


def resolve_hardware(plan: Plan, overrides: dict[str, Any] | None = None) -> GPU:
    from mlrig.catalog.gpus import resolve_plan_hardware

    gpu = resolve_plan_hardware(plan.hardware)
    if overrides:
        gpu = gpu.model_copy(update=overrides)
    return gpu


def plan_from_fields(model: str | None = None, base: dict[str, Any] | None = None,
                     **fields: Any) -> dict[str, Any]:
    """Build a plan dict from flat keyword fields (CLI flags, API kwargs), placing each in its section.

    `base` (e.g. a plan file) is overlaid by the fields given; None values are ignored.
    """
    from mlrig.workload import HardwareSpec, TrainingSpec, WorkloadSpec

    data: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in (base or {}).items()}
    if isinstance(data.get("model"), str):
        data["model"] = {"name": data["model"]}
    if model is not None:
        data["model"] = {"name": model}
    sections: dict[str, type[BaseModel]] = {
        "workload": WorkloadSpec, "training": TrainingSpec, "hardware": HardwareSpec}
    for key, value in fields.items():
        if value is None:
            continue
        if key == "id":
            data["id"] = value
            continue
        for section, spec in sections.items():
            if key in spec.model_fields:
                data.setdefault(section, {})[key] = value
                break
        else:
            raise MlrigError(f"unknown plan field {key!r}; see docs/PLAN-FORMAT.md")
    _take_count_apart(data.get("hardware"))
    return data


def _take_count_apart(hw: Any) -> None:
    """`--gpu '2x RTX 3090'` as people write a machine (and `compare`/`recommend --have` read it): the GPU and
    hardware.count = 2, in place. A different --count as well is an error naming both; a plan file's
    hardware.gpu is left as written (resolve_gpu says how to give the count there)."""
    from mlrig.catalog.gpus import split_gpu_count

    if not isinstance(hw, dict) or not isinstance(hw.get("gpu"), str):
        return
    counted = split_gpu_count(hw["gpu"])
    if counted is None:
        return
    n, rest = counted
    given = hw.get("count")
    if given is not None and given != n:
        raise MlrigError(f"GPU {hw['gpu']!r} holds a count of {n} and --count says {given}: give one "
                         f"(--gpu '{rest}' -n {given}, or --gpu {hw['gpu']!r} without -n)")
    hw["gpu"], hw["count"] = rest, n


def default_engine(precision: str, gpu: GPU, plan: Plan | None = None, arch: ModelArch | None = None) -> str:
    """The engine a user of this setup most likely runs when they name none (issue 10; one place,
    so memory and speed always assume the same engine):
    - llama.cpp for GGUF formats and any weights packaged as GGUF (an ollama tag's '-fp16' build, a
      .gguf file of F16: `ModelArch.gguf_packaged`), Apple silicon (Metal), CPU-only hosts, partial offload (-ngl),
      consumer AMD / Intel cards (its ROCm/Vulkan/SYCL builds are what those users run) and NVIDIA cards
      before Volta (`pre_volta`: the serving engines do not run there);
    - ExLlamaV2 for EXL2 weights, MLC for its q4f16 formats, MLX for its own formats ('mlx-4bit', an
      mlx-community repo: llama.cpp cannot load them);
    - MLX for a Hugging Face 16/32-bit checkpoint on Apple silicon: mlx-lm loads the HF safetensors as they are
      (ml-explore/mlx-lm README: `mlx_lm.generate --model <HF repo>`), where llama.cpp needs them converted to
      GGUF first (convert_hf_to_gguf.py); a GGUF build (an ollama tag, a .gguf, a K-quant) stays on llama.cpp;
    - vLLM otherwise: datacentre cards, TPUs (its JAX backend), several GPUs, batched or serving
      loads, and HF checkpoints (16-bit, GPTQ, AWQ, FP8) on NVIDIA cards. Eager HF transformers
      is never the default: on published runs it was 37-56 % slower on decode than what users run."""
    from mlrig.quant import parse_precision

    parsed = parse_precision(precision)
    p = parsed.name
    # GGUF's own tensor types beside its block quants: F16, BF16, F32 and MXFP4 (ggml.h `ggml_type`)
    gguf = parsed.llama_cpp_only or (arch is not None and arch.gguf_packaged and p in ("fp16", "bf16", "fp32", "mxfp4"))
    if p.startswith("exl2"):
        return "exllamav2"
    if p.startswith(("q4f16", "q3f16")):
        return "mlc"
    if p.startswith("mlx"):
        if gpu.hardware_class != "apple":
            raise MlrigError(f"{precision} is MLX's weight format, which runs on Apple silicon only, not on "
                             f"{gpu.name}; give a precision this GPU runs (e.g. --precision q4_k_m, awq, bf16)")
        return "mlx"
    if gpu.hardware_class == "tpu":
        return "vllm"
    offload = plan is not None and plan.workload.gpu_layers is not None
    if gpu.hardware_class == "apple" and not gguf and not offload and p in HF_CHECKPOINT_PRECISIONS:
        return "mlx"
    if gguf or offload or gpu.hardware_class in ("apple", "cpu") or pre_volta(gpu):
        return "llama.cpp"
    batched = plan is not None and (plan.workload.batch_size > 1 or plan.workload.load != "static"
                                    or plan.hardware.total_gpus > 1)
    if gpu.hardware_class in ("amd", "intel") and gpu_memory_class_of(gpu) != "hbm" and not batched:
        return "llama.cpp"
    return "vllm"


# The precisions of an unquantised Hugging Face checkpoint (what a plain HF name with --precision bf16 means).
HF_CHECKPOINT_PRECISIONS = ("bf16", "fp16", "fp32")


def pre_volta(gpu: GPU) -> bool:
    """An NVIDIA card older than Volta (Kepler, Maxwell, Pascal: P40, P100, K80, GTX 10xx): vLLM, SGLang and
    TensorRT-LLM need compute capability 7.0 or higher (vLLM docs, "Installation: GPU requirements"), so its
    users run llama.cpp."""
    arch = (gpu.architecture or "").split(" ")[0]
    return gpu.vendor == "NVIDIA" and arch in ("Kepler", "Maxwell", "Pascal")


def gpu_memory_class_of(gpu: GPU) -> str:
    from mlrig.estimators.efficiency import memory_class

    return memory_class(gpu.hardware_class, gpu.memory_type)


def with_defaults(p: Plan, gpu: GPU, arch: ModelArch | None = None) -> tuple[Plan, list[str]]:
    """Fill what an inference user usually leaves implicit, and say so in notes:
    - the precision, when none was given and the checkpoint ships quantised (a GGUF file's type,
      gpt-oss's MXFP4, DeepSeek-V3's FP8): the weights as they are;
    - the engine (see `default_engine`);
    - how several GPUs in one node share the model when no parallelism is given: llama.cpp splits
      layers across them (its default `--split-mode layer`), serving engines use tensor parallelism
      (vLLM `--tensor-parallel-size N`). Training keeps data parallelism (+ ZeRO) as given."""
    from mlrig import quant

    check_engine_version(p)
    notes: list[str] = []
    w = p.workload
    precision_given = "precision" in w.model_fields_set
    # One spelling per precision from here on ("float16" -> "fp16", "Q4_K_M" -> "q4_k_m"), so every
    # estimator classifies the same format the same way. The workload's changes are gathered and made in
    # one copy (a plan is copied once per defaults taken, ~1,800 times in one `fit` over the catalog).
    changes: dict[str, Any] = {
        "precision": quant.normalise_precision(w.precision),
        "kv_cache_precision": quant.normalise_precision(w.kv_cache_precision) if w.kv_cache_precision else None}
    if w.task != "inference":
        t = p.training
        # a plan that says how the model's states are sharded or offloaded (ZeRO, offload) describes a full
        # fine-tune: those knobs exist for it; one that says neither gets the method its GPUs run
        if (w.task == "finetune" and t is not None and arch is not None
                and not {"method", "zero_stage", "offload"} & t.model_fields_set):
            p = p.model_copy(update={"workload": w.model_copy(update=changes)})
            p, note = with_default_method(p, gpu, arch)
            notes.append(note)
            w, t = p.workload, p.training
        if t is not None and t.zero_stage == 3 and "zero_stage" not in t.model_fields_set:
            from mlrig.workload import ZERO_DEFAULT_NOTE

            notes.append(f"{ZERO_DEFAULT_NOTE} over the {p.hardware.total_gpus} GPUs, what multi-GPU full "
                         "fine-tuning recipes run (torchtune full_finetune_distributed, LLaMA-Factory's full-parameter "
                         "examples with DeepSpeed ZeRO-3); pass --zero 0 for plain DDP, --zero 2 for ZeRO-2")
        return p.model_copy(update={"workload": w.model_copy(update=changes)}), notes
    hw = p.hardware
    shipped = arch and (arch.weight_format or arch.quant_method)
    if not precision_given and arch is not None and shipped:
        native = quant.native_precision(arch)
        if native != changes["precision"]:
            changes["precision"] = native
            notes.append(f"no precision given: the weights as shipped ({native}); pass --precision to change")
    if w.engine is not None and w.engine.strip().lower().startswith("lmdeploy"):
        from mlrig.estimators.engines import CURRENT, lmdeploy_pytorch_engine

        if lmdeploy_pytorch_engine(w.engine, w.engine_version) and "+" not in (w.engine_version or "+"):
            # `--engine lmdeploy-pytorch`: one spelling from here on, engine "lmdeploy" and the version's
            # "+pytorch" label (engines.lmdeploy_pytorch_engine), as TensorRT-LLM's backend is written
            changes["engine"] = "lmdeploy"
            changes["engine_version"] = f"{w.engine_version}+pytorch"
        elif lmdeploy_pytorch_engine(w.engine, w.engine_version) and w.engine_version is None:
            changes["engine"] = "lmdeploy"
            changes["engine_version"] = f"{CURRENT['lmdeploy']}+pytorch"
            notes.append(f"no engine_version given: lmdeploy's current release assumed (~{CURRENT['lmdeploy']}), "
                         "its PyTorch engine; pass --engine-version for older behaviour")
        elif lmdeploy_pytorch_engine(w.engine, w.engine_version):
            changes["engine"] = "lmdeploy"
    if w.engine is None:
        # default_engine reads the plan's batch, load, offload and GPU count, none of which change here
        changes["engine"] = default_engine(changes["precision"], gpu, p, arch)
    w = w.model_copy(update=changes)
    if p.workload.engine is None:
        why = ("mlx-lm runs the Hugging Face checkpoint on Apple silicon as it is (llama.cpp needs it converted to "
               "GGUF)" if w.engine == "mlx" and not str(w.precision).startswith("mlx")
               else "what users of this setup most likely run" if w.engine != "vllm"
               else "the serving engine datacentre, multi-GPU, batched and HF-checkpoint users run")
        notes.append(f"no engine given: assumed {w.engine}, {why} (pass --engine vllm, llama.cpp, sglang, "
                     "transformers, ... to change)")
    if w.engine_version is None:
        from mlrig.estimators.engines import CURRENT

        fam = w.engine.lower() if w.engine else ""
        # ollama, LM Studio and llamafile run llama.cpp: its current build is what they are priced as
        current = next((v for k, v in CURRENT.items() if fam.startswith(k.split(".")[0])), None)
        if llama_cpp_front_end(fam):
            notes.append(f"no engine_version given: {w.engine}'s current release assumed, its kernels priced as "
                         f"llama.cpp's current build (~{CURRENT['llama.cpp']}); pass --engine-version for older "
                         "behaviour")
        elif current:
            notes.append(f"no engine_version given: {w.engine}'s current release assumed (~{current}); "
                         "pass --engine-version for older behaviour")
    else:
        from mlrig.estimators.engines import engine_version_unread_note

        unread = engine_version_unread_note(w.engine, w.engine_version)
        if unread:
            notes.append(unread)
    if runs_llama_cpp(w.engine) and gpu.hardware_class == "amd":
        from mlrig.estimators.engines import llama_cpp_backend

        if llama_cpp_backend(gpu, w.engine_version) == "hip":
            notes.append("llama.cpp on an AMD GPU: its HIP (ROCm) build assumed; add +vulkan to --engine-version "
                         "(e.g. b6000+vulkan) for the Vulkan build")
    # --tp / --pp given (1 included): the model spans TP x PP GPUs and the rest are data-parallel replicas
    # (mlrig/estimators/replicas.py); none given: the model spans a node's GPUs, and the nodes by pipeline
    # llama.cpp: --tp 1 alone still splits layers (its --split-mode layer default); replicas need --pp given
    assert w.engine is not None
    llama = runs_llama_cpp(w.engine)
    layout_given = bool(({"pipeline_parallel"} if llama else {"tensor_parallel", "pipeline_parallel"})
                        & hw.model_fields_set)
    if hw.count > 1 and hw.tensor_parallel == 1 and hw.pipeline_parallel == 1 and not layout_given:
        per_node = " of each node" if hw.nodes > 1 else ""
        if llama:
            replicas = f"; the {hw.nodes} nodes are {hw.nodes} replicas" if hw.nodes > 1 else ""
            hw = hw.model_copy(update={"pipeline_parallel": hw.count})
            notes.append(f"llama.cpp splits layers over the {hw.count} GPUs{per_node} (pipeline){replicas}; pass "
                         "--tp for tensor parallelism (--split-mode tensor)")
        elif arch is not None and not tp_divides_heads(arch, hw.count):
            # TP over every GPU would split the attention heads unevenly, which serving engines refuse; vLLM's
            # "Parallelism and Scaling" guide: when the GPU count does not evenly divide the model, "enable
            # pipeline parallelism, which splits the model along layers and supports uneven splits" (TP 1,
            # PP = the GPUs). The largest TP that divides both the heads and the GPUs is kept, PP over the rest.
            tp = max(t for t in range(1, hw.count + 1) if hw.count % t == 0 and tp_divides_heads(arch, t))
            pp = hw.count // tp
            hw = hw.model_copy(update={"tensor_parallel": tp, "pipeline_parallel": pp * hw.nodes})
            heads = f"{arch.num_heads} attention heads / {arch.num_kv_heads or arch.num_heads} KV heads"
            layout = f"pipeline parallelism over {pp} stages" + (f" of TP {tp}" if tp > 1 else "")
            notes.append(f"{w.engine}: {hw.count} GPUs{per_node} do not divide the model's {heads} for tensor "
                         f"parallelism: {layout} assumed (vLLM --tensor-parallel-size {tp} "
                         f"--pipeline-parallel-size {pp * hw.nodes}), one copy of the model; pass --tp/--pp to change")
        else:
            # several nodes: one copy of the model, TP within a node and PP across nodes, as vLLM's
            # "Parallelism and Scaling" guide sets up multi-node serving (TP = GPUs per node, PP = nodes)
            hw = hw.model_copy(update={"tensor_parallel": hw.count, "pipeline_parallel": hw.nodes})
            pipeline = f" and pipeline parallelism over the {hw.nodes} nodes" if hw.nodes > 1 else ""
            notes.append(f"{w.engine}: tensor parallelism over the {hw.count} GPUs{per_node}{pipeline} assumed, one "
                         f"copy of the model; pass --tp/--pp to change (--tp 1: {hw.count * hw.nodes} data-parallel "
                         "replicas, vLLM --data-parallel-size; more throughput where one GPU holds the model)")
    if runs_llama_cpp(w.engine) and hw.tensor_parallel > 1:
        notes.append(LLAMA_CPP_TP_NOTE)
    return p.model_copy(update={"workload": w, "hardware": hw}), notes


# What a llama.cpp plan's tensor_parallel > 1 is priced as. performance.pass_time treats it as tensor parallelism:
# each GPU holds 1/N of every layer's weights and KV, with an all-reduce after attention and after the FFN - what
# llama.cpp's `--split-mode tensor` does (ggml's backend-agnostic tensor parallelism, ggml-org/llama.cpp PR #19378,
# in builds from spring 2026: mudler/LocalAI PR #9560, 2026-04-25, exposes it as `tensor`). The older
# `--split-mode row` is another mechanism: it splits only the dense weight matrices by rows, synchronises and
# gathers the partial results on the main GPU after every matrix multiplication, and keeps the KV cache and
# attention on the main GPU (ikawrakow/ik_llama.cpp PR #1018, 2025-11-27, contrasting it with two
# synchronisation points per layer; llama.cpp docs/multi-gpu.md, PR #22729, 2026-05-07: "deprecated ... with
# comparatively poor performance. Splits only dense weights"). Published row-split runs were slower than layer
# split, where this pricing makes tensor_parallel ~1.7x faster (Llama-3-70B Q4_K_M on 2x RTX 3090: 33 against
# 19 tok/s): GLM-5.2 UD-Q4_K_M on 8x A100 80 GB decoded at 7.1 tok/s with `-sm row` against 23.4 with
# `-sm layer` (anthony-chaudhary/fak issue #3075, 2026-07-10). No published
# row-split run of a model mlrig can resolve was found to fit a row-split model on, so it is not priced. The row-split
# runs found since (calibration/SOURCES-inference.md, "Multi-GPU llama.cpp") are of Qwen3.5-27B, a hybrid the catalog
# cannot describe: on 2x V100 row split decoded slower than one GPU (21.4 against 22.8 tok/s; layer 25.0) and its
# pp512 was 3.8x slower than layer split; on 2x R9700 (ROCm) it decoded 11 % faster than layer split, pp512 1.7x slower.
# How a split_mode key would price it, from ggml/src/ggml-cuda/ggml-cuda.cu `ggml_cuda_op_mul_mat` (its `split` branch,
# weights in the split buffer type): per matrix multiplication the main GPU records an event the others wait on, the
# q8_1-quantised activations are copied peer-to-peer to each GPU (cudaMemcpyPeerAsync / ggml_cuda_Memcpy2DPeerAsync),
# each GPU multiplies its rows, the fp32 output slices are copied back to the main GPU, which waits on every GPU's
# event; norms, attention and the KV cache stay on the main GPU. So: weight reads / N + per split matmul two
# cross-GPU waits and the two copies. Both runs above fit that: one-GPU time less half the weights' leaves ~25 ms
# (V100) and ~18 ms (R9700) per token over the ~400 split matmuls of Qwen3.5-27B, ~45-60 us each.
LLAMA_CPP_TP_NOTE = ("llama.cpp tensor_parallel is priced as --split-mode tensor (tensor parallelism, an all-reduce "
                     "after attention and after the FFN); the deprecated --split-mode row (a sync after every "
                     "matmul, KV on the main GPU) is not modelled: published runs of it were slower than layer split")


# The probe of `default_finetune_method`: the smallest run anyone trains (one sequence of 512 tokens per GPU), so the
# method a fine-tune defaults to depends on the model, the precision, the optimizer and the GPUs, never on the
# plan's micro-batch or sequence (`mlrig eval` prices plans that differ only there together: mlrig/grid.py)
METHOD_PROBE_SEQ_TOKENS = 512


def default_finetune_method(p: Plan, gpu: GPU, arch: ModelArch) -> str:
    """The method of a fine-tune that names none: what its users run on these GPUs. Full fine-tuning where it
    fits, else LoRA (frozen 16-bit base, adapters trained) where that fits, else QLoRA (4-bit NF4 base): full
    fine-tuning keeps ~16 B per parameter of weights, gradients and AdamW states (ZeRO, Rajbhandari et al. 2020,
    sec. 3.1), so a 7B needs ~110 GiB before activations and no 24 GB card runs it, while LoRA keeps 2 B per
    frozen parameter and QLoRA ~0.5 (Dettmers et al. 2023, QLoRA: a 65B on one 48 GB GPU). "Fits" is the plan's
    own memory estimate at micro-batch 1 x `METHOD_PROBE_SEQ_TOKENS` tokens with the plan's other settings
    (checkpointing, ZeRO, offload, optimizer), so the choice does not move with the batch or sequence asked
    about; whether the plan itself fits is then its own answer, with the usual fixes."""
    from mlrig.estimators.memory import estimate_memory
    from mlrig.estimators.resolved import resolve

    for method in ("full", "lora"):
        q = _with_method(p, method)
        assert q.training is not None
        q = q.model_copy(update={"workload": q.workload.model_copy(update={"batch_size": 1}),
                                 "training": q.training.model_copy(update={"seq_len": METHOD_PROBE_SEQ_TOKENS})})
        try:
            if estimate_memory(resolve(arch, q, gpu)).fits:
                return method
        except (MlrigError, ValidationError):
            continue  # a method this setup refuses is not the default
    return "qlora"


def _with_method(p: Plan, method: str) -> Plan:
    """`p` with `training.method` set, its defaults that hang on the method taken anew (ZeRO 3 is the default of a
    multi-GPU full fine-tune only: workload.sharded_by_default)."""
    from mlrig.workload import Plan as PlanModel

    t = p.training
    assert t is not None
    data = p.model_dump(exclude_unset=True)
    data.setdefault("training", {})["method"] = method
    q = PlanModel.model_validate(data)
    # the lengths and precision with_defaults has already settled are kept as they are
    return q.model_copy(update={"workload": p.workload})


def with_default_method(p: Plan, gpu: GPU, arch: ModelArch) -> tuple[Plan, str]:
    """A fine-tune that names no method with `default_finetune_method`'s, and the note that says so."""
    method = default_finetune_method(p, gpu, arch)
    cap = f"{gpu.capacity_gib:.0f} GiB"
    where = f"{p.hardware.total_gpus} x {cap}" if p.hardware.total_gpus > 1 else f"one {cap} card"
    why = {"full": "a full fine-tune fits",
           "lora": f"a full fine-tune does not fit even one {METHOD_PROBE_SEQ_TOKENS}-token sequence",
           "qlora": f"neither a full fine-tune nor LoRA on a 16-bit base fits one {METHOD_PROBE_SEQ_TOKENS}-token "
                    "sequence"}[method]
    other = "--method lora or qlora for adapters" if method == "full" else "--method full for full fine-tuning"
    return _with_method(p, method), f"method: {method} (default for {where}: {why}; {other})"


def alternative_engines(precision: str, gpu: GPU, chosen: str) -> list[str]:
    """Engines that run these weights on this hardware, for `plan`'s side-by-side line: GGUF block formats
    (Q8_0 included) only llama.cpp; Apple llama.cpp and MLX; a CPU host llama.cpp (16-bit also transformers);
    16-bit, FP8 and GPU 4-bit formats the serving engines and transformers (16-bit also llama.cpp); TensorRT-LLM on
    NVIDIA only."""
    from mlrig.quant import parse_precision

    parsed = parse_precision(precision)
    fam = parsed.family
    if gpu.hardware_class == "apple":
        names = ["llama.cpp", "mlx"]
    elif gpu.hardware_class == "cpu":
        names = ["llama.cpp"] + (["transformers"] if fam == "f16" else [])
    elif fam in ("kquant", "legacy") or parsed.llama_cpp_only:  # GGUF's Q8_0 too (family "q8", as int8)
        names = ["llama.cpp"]
    else:
        names = ["vllm", "sglang", "trt-llm", "transformers"] + (["llama.cpp"] if fam in ("f16", "q8") else [])
        if gpu.hardware_class not in ("geforce", "workstation", "datacenter"):
            names.remove("trt-llm")
    return [n for n in names if not chosen.lower().startswith(n.split(".")[0])]


def prepare(p: Plan, arch: ModelArch, gpu: GPU) -> tuple[Plan, list[str]]:
    """The plan as the estimators see it (`with_defaults`) and the notes every result of it starts
    with: the GPU assumed, the model's and the GPU's own notes, the defaults taken. `check_setup`'s
    come after them."""
    assumed = "gpu" not in p.hardware.model_fields_set and p.hardware.gpu_spec is None
    p, notes = with_defaults(p, gpu, arch)
    if p.workload.task != "inference" and p.training is not None and p.training.method == "qlora" \
            and gpu.hardware_class == "tpu":
        # QLoRA's frozen base is bitsandbytes' NF4 (Dettmers et al. 2023, arXiv 2305.14314); bitsandbytes runs on
        # CUDA, and on ROCm, Intel XPU / CPU and Gaudi HPU through its multi-backend builds, not on a TPU (XLA)
        # (huggingface.co/docs/bitsandbytes installation); the calibration's QLoRA rows are all on GPUs
        raise MlrigError(f"QLoRA's 4-bit base is bitsandbytes NF4, which has no TPU (XLA) backend, so it cannot run"
                         f" on {gpu.name}; use --method lora there, or a GPU for QLoRA")
    notes = [*arch.notes, *gpu.resolution_notes, *notes]
    if assumed:
        notes.insert(0, f"no GPU given: assumed {gpu.name} ({gpu.id}), the default; pass --gpu NAME "
                        "(e.g. --gpu 'RTX 3090', --gpu 'H100 SXM')")
    return p, [*notes, *fp8_attention_note(p, gpu)]


def evaluate(plan: Plan | dict[str, Any], *, arch: ModelArch | None = None, gpu: GPU | None = None,
             gpu_overrides: dict[str, Any] | None = None, alternatives: bool = False) -> PlanResult:
    """Memory and speed for one plan. Raises MlrigError on bad input.
    `alternatives`: also the other engines' decode/prefill (`alternative_engines`; `mlrig plan`).

    `arch`/`gpu` may be passed pre-resolved (sweeps over many GPUs resolve once);
    `gpu_overrides` replaces datasheet figures with measured ones (`mlrig plan --machine local`).
    """
    from mlrig.estimators.memory import estimate_memory

    r, notes = resolve_plan(plan, arch=arch, gpu=gpu, gpu_overrides=gpu_overrides)
    p, gpu = r.plan, r.gpu
    try:
        result = result_of(r, estimate_memory(r), notes)
    except ValidationError as exc:
        raise MlrigError(validation_message(exc, "input")) from None
    performance = result.performance
    if (alternatives and performance is not None and p.workload.task == "inference"
            and p.workload.load == "static" and p.workload.engine):
        from mlrig.estimators.speed import estimate_performance

        others: dict[str, dict[str, float]] = {}
        for name in alternative_engines(p.workload.precision, gpu, p.workload.engine):
            try:
                q = r.varied(engine=name, engine_version=None)
                perf = estimate_performance(q, estimate_memory(q))
            except MlrigError:
                continue  # an engine that refuses this setup is left out
            if perf.decode_tok_s and perf.prefill_tok_s:
                others[name] = {"decode_tok_s": round(perf.decode_tok_s, 2),
                                "prefill_tok_s": round(perf.prefill_tok_s, 1)}
        performance.other_engines = others
    return result


# replicas_hint's smallest throughput gain worth suggesting where the figure's scope is not validated: about the
# median error of the validated serving-throughput scopes (vLLM 8-12%, TensorRT-LLM 8%, LMDeploy 6%; README)
REPLICAS_HINT_MIN_GAIN = 0.10


def replicas_hint(user: Plan, result: PlanResult, arch: ModelArch, gpu: GPU) -> str | None:
    """`mlrig plan`'s note (its human and markdown views; each figure of `result` stays what every command
    gives) when a serving engine took TP over all the node's GPUs by default (`with_defaults`) and fewer GPUs
    hold the model: the smallest such TP, the rest data-parallel replicas, and what that layout gives at this
    load, shown where it serves more output tokens/s. vLLM's guidance ("Parallelism and Scaling": if the model
    fits on a single GPU, distributed inference is probably unnecessary; add GPUs until the model fits) and
    its Data Parallel Deployment run the copies that fit side by side. Shown only where the replicas' gain is
    clear: above the median error of this throughput figure's validation scope (`result.validation`; 8% for vLLM
    on GDDR cards), REPLICAS_HINT_MIN_GAIN where the scope is not validated; a smaller gain is one the model
    cannot tell from a tie, not worth running N servers for."""
    hw, w, engine = user.hardware, user.workload, (result.engine or "").lower()
    if (w.task != "inference" or (result.data_parallel_replicas or 1) > 1 or hw.nodes > 1 or hw.count < 2
            or {"tensor_parallel", "pipeline_parallel"} & hw.model_fields_set or hw.expert_parallel > 1
            or not engine or runs_llama_cpp(engine)):
        return None
    now = result.performance
    for tp in (k for k in range(1, hw.count) if hw.count % k == 0):
        try:
            other = evaluate(user.model_copy(update={"hardware": hw.model_copy(update={"tensor_parallel": tp})}),
                             arch=arch, gpu=gpu)
        except MlrigError:
            continue  # a TP the heads do not divide
        perf = other.performance
        if not other.fits or perf is None:
            continue
        if now is None or not now.throughput_tok_s:
            return None
        gain = (perf.throughput_tok_s or 0.0) / now.throughput_tok_s - 1
        scope = result.validation.get("throughput_tok_s")
        margin = scope.median_error if scope is not None and scope.validated and scope.median_error is not None \
            else REPLICAS_HINT_MIN_GAIN
        if gain <= margin:
            return None
        return (f"the model fits on {tp} GPU{'s' if tp > 1 else ''}: --tp {tp} runs {hw.count // tp} data-parallel "
                f"replicas (vLLM --data-parallel-size; its advice: the fewest GPUs that hold the model) for "
                f"{perf.throughput_tok_s:,.0f} output tok/s at this load against {now.throughput_tok_s:,.0f} "
                f"(+{gain:.0%}, beyond the figure's {margin:.0%} median error), decode {perf.decode_tok_s or 0:,.0f} "
                f"tok/s per sequence against {now.decode_tok_s or 0:,.0f}")
    return None


def resolve_plan(plan: Plan | dict[str, Any], *, arch: ModelArch | None = None, gpu: GPU | None = None,
                 gpu_overrides: dict[str, Any] | None = None) -> tuple[ResolvedPlan, list[str]]:
    """What `evaluate` estimates: the plan parsed, its model and GPU resolved (unless given), its
    defaults taken (`prepare`), its setup checked (`check_setup`) and resolved once; with the notes
    its result starts with. Raises MlrigError on bad input."""
    from mlrig.estimators.replicas import replica_plan, replica_scale, serving_replicas
    from mlrig.estimators.resolved import resolve

    p = parse_plan(plan)
    arch = arch or resolve_arch(p)
    gpu = gpu or resolve_hardware(p, gpu_overrides)
    p, notes = prepare(p, arch, gpu)
    notes += check_setup(arch, p)
    p = with_seq_len(arch, p)  # after check_setup, which notes the default length
    notes += mxfp8_gemm_note(p, gpu)
    notes += int8_gemm_note(p, gpu)
    n_replicas = serving_replicas(p)
    try:
        if n_replicas == 1:
            return resolve(arch, p, gpu), notes
        one = replica_plan(p, n_replicas)
        notes.append(replicas_note(p, n_replicas))
        return replace(resolve(arch, one, gpu), replicas=n_replicas,
                       replica_scale=replica_scale(p.workload, one.workload, n_replicas)), notes
    except ValidationError as exc:
        raise MlrigError(validation_message(exc, "input")) from None


def fp8_attention_note(p: Plan, gpu: GPU) -> list[str]:
    """A note where `training.fp8_dot_product_attention` is asked for but cannot run (`training_speed.
    fp8_attention_applies`: cuDNN's FP8 attention needs an NVIDIA Hopper / datacentre Blackwell GPU and the cuDNN
    kernel): the attention is priced in BF16."""
    from mlrig.estimators.training_speed import fp8_attention_applies

    t = p.training
    if p.workload.task == "inference" or t is None or not t.fp8_dot_product_attention:
        return []
    if fp8_attention_applies(gpu, p.workload.engine, t.attention_kernel):
        return []
    return [f"fp8_dot_product_attention: no FP8 attention kernel for this setup (cuDNN's FP8 fused attention runs on "
            f"NVIDIA Hopper and datacentre Blackwell GPUs, through the cuDNN kernel NeMo / Megatron-Core pick there; "
            f"{gpu.name} with the {t.attention_kernel or 'default'} kernel): attention priced in BF16"]


def replicas_note(p: Plan, n_replicas: int) -> str:
    """The note of a plan run as data-parallel replicas: the layout, and how the load was split."""
    from mlrig.estimators.replicas import replicas_line

    w = p.workload
    if w.load == "rate":
        share = f"{(w.request_rate or 0.0) / n_replicas:g} req/s each"
    elif w.load == "offline" and w.num_requests is None and "batch_size" not in w.model_fields_set:
        share = "each runs at its own batch cap"
    elif w.load == "offline" and w.num_requests is not None:
        share = f"up to {-(-w.num_requests // n_replicas)} requests each"
    else:
        share = f"up to {-(-w.batch_size // n_replicas)} {'users' if w.load == 'concurrency' else 'sequences'} each"
    return (f"{replicas_line(p.hardware, n_replicas)}: each replica holds the whole model and its own KV pool and "
            f"serves an even share of the load ({share}); throughput and requests/s add up, TTFT/TPOT, memory per "
            "GPU and the KV capacity are one replica's")


def result_of(r: ResolvedPlan, memory: MemoryEstimate, notes: list[str],
              figures: StaticInference | TrainingSpeed | None = None) -> PlanResult:
    """The result of a resolved plan whose memory is estimated: what a serving engine would refuse,
    the speed (`figures`: a static batch's or a training step's already worked out, `mlrig.grid`),
    training time, and each figure's validation. `notes` are the plan's so far; the refusal joins them."""
    from mlrig.estimators.speed import estimate_performance

    p, arch, gpu = r.plan, r.arch, r.gpu
    refusal = engine_refusal(p, memory, gpu.vendor, gpu, arch)
    max_model_len_limit = None
    if refusal:
        notes.append(refusal)
    elif (p.workload.task == "inference" and (p.workload.engine or "").lower() == "vllm"
          and p.workload.max_model_len is None and arch.max_position_embeddings
          and memory.kv_cache_capacity_tokens is not None
          and memory.kv_cache_capacity_tokens < arch.max_position_embeddings):
        max_model_len_limit = memory.kv_cache_capacity_tokens
        notes.append(f"vLLM's default --max-model-len is the model's maximum ({arch.max_position_embeddings:,} "
                     f"tokens) and this KV pool holds {memory.kv_cache_capacity_tokens:,}: pass "
                     f"--max-model-len {memory.kv_cache_capacity_tokens} or less, or vLLM refuses to start")
    if r.link is not None and p.hardware.count > 1:
        from mlrig.estimators.hardware import link_transport_note

        transport = link_transport_note(r.link, gpu)
        if transport is not None:
            notes.append(transport)
    performance = None if refusal else estimate_performance(r, memory, figures)
    if performance is not None and p.workload.task == "inference" and p.workload.load == "rate":
        from mlrig.estimators.serving import overload_note, overloaded

        capacity = performance.capacity_requests_per_s  # one replica's, at its share of the rate
        if capacity is not None and overloaded(p.workload.request_rate, capacity):
            notes.append(("each replica: " if r.replicas > 1 else "") + overload_note(p.workload, capacity))
    if performance is not None and r.replicas > 1:
        from mlrig.estimators.replicas import replicas_line, scale_performance

        performance = scale_performance(performance, r.replica_scale, replicas_line(p.hardware, r.replicas))
    if performance is not None and p.workload.task == "inference" and p.hardware.power_limit_w:
        # the cap scales training's compute peak only (training_speed.power_capped_tflops): say so, not silently
        notes.append(f"power_limit_w {p.hardware.power_limit_w:g} W: inference speed is priced at full clocks (the "
                     "cap scales training's compute peak only); decode is memory-bandwidth bound and changes little, "
                     "prefill may be slower")
    if performance is not None and p.workload.task == "inference":
        w = p.workload  # the lengths the speed is priced at
        performance.prompt_tokens, performance.output_tokens = w.prompt_tokens, w.output_tokens
        if performance.decode_context_tokens is None:  # a serving load sets the one its iterations read
            performance.decode_context_tokens = w.mean_decode_context
    training = None
    if p.workload.task != "inference":
        from mlrig.estimators.training_speed import estimate_training_run

        assert performance is not None  # only inference engines refuse
        training = estimate_training_run(r, performance)
        if p.training is not None:
            training = training.model_copy(update={"method": p.training.method})
    result = PlanResult(
        id=p.id,
        fits=memory.fits and refusal is None,  # a --max-model-len the pool cannot hold: vLLM does not start
        model=arch.hf_id or arch.id,
        gpu=gpu.id,
        precision=p.workload.precision,
        base_weights_precision=base_weights_precision(r),
        engine=p.workload.engine if p.workload.task == "inference" else None,
        memory=memory.breakdown,
        kv_cache_capacity_tokens=memory.kv_cache_capacity_tokens,
        max_model_len_limit_tokens=max_model_len_limit,
        data_parallel_replicas=r.replicas if p.workload.task == "inference" else None,
        performance=performance,
        training=training,
        notes=notes,
        validation={},  # given, not defaulted: pydantic deep-copies a mutable default on every instance
    )
    attach_validation(result, p, gpu)
    return result


def base_weights_precision(r: ResolvedPlan) -> str | None:
    """A QLoRA plan's frozen base format (memory.qlora_base_precision: its own NF4 variant, else NF4 with double
    quantisation, the QLoRA paper's set-up), which `precision`, the compute dtype, does not say; None otherwise."""
    from mlrig.estimators.memory import qlora_base_precision

    t = r.plan.training
    if r.plan.workload.task == "inference" or t is None or t.method.lower() != "qlora":
        return None
    return qlora_base_precision(r.precision).name


def attach_validation(result: PlanResult, plan: Plan, gpu: GPU) -> None:
    """Each figure's validation scope (mlrig/validation/scopes.py), and its ± band from that scope:
    the p90 error of the published runs in it; for a small scope (fewer than scopes.SMALL_SCOPE_ROWS runs)
    never narrower than the figure's default band; for one with too few to validate, the wider of the
    default band and the nearest validated scope's p90."""
    from mlrig.validation.scopes import small_scope, validation_for

    result.validation = validation_for(result, plan, gpu)
    perf = result.performance
    if perf is None:
        return
    for figure, band in list(perf.error_band.items()):
        v = result.validation.get(figure)
        if v is None:
            continue
        if v.validated and v.p90_error is not None:
            perf.error_band[figure] = round(max(band, v.p90_error) if small_scope(v.rows) else v.p90_error, 3)
        elif v.nearest_p90_error is not None:
            perf.error_band[figure] = round(max(band, v.nearest_p90_error), 3)
    for figure, floor in perf.band_floor.items():  # the estimate's own wider bands (serving.overload_ttft_band)
        perf.error_band[figure] = max(perf.error_band.get(figure, 0.0), floor)


def _inference_gemm_dtype(p: Plan, gpu: GPU, precision_name: str) -> tuple[str, str] | None:
    """(engine family, GEMM dtype) of an inference plan in `precision_name` (`performance.gemm_dtype_on`), or None
    for other tasks and precisions, and for an engine refused later with its own message."""
    from mlrig.quant import parse_precision

    w = p.workload
    precision = parse_precision(w.precision)
    if w.task != "inference" or precision.name != precision_name:
        return None
    from mlrig.estimators.engines import engine_family
    from mlrig.estimators.performance import gemm_dtype_on

    try:
        engine = engine_family(w.engine, precision, gpu, w.engine_version)
    except MlrigError:
        return None
    return engine, gemm_dtype_on(gpu, precision, engine, w.engine_version)


def mxfp8_gemm_note(p: Plan, gpu: GPU) -> list[str]:
    """How an MXFP8 model's GEMMs run in an inference plan (`performance.gemm_dtype_on`): MXFP8 x MXFP8 at the FP8
    rate on Blackwell in the engines with MXFP8 kernels (quant.MXFP8_GEMM_FROM), else de-quantised to 16 bits."""
    found = _inference_gemm_dtype(p, gpu, "mxfp8")
    if found is None:
        return []
    engine, dtype = found
    if dtype == "fp8":
        return [f"MXFP8: {engine} runs MXFP8 x MXFP8 GEMMs (activations quantised on the fly) at {gpu.name}'s FP8 "
                "rate"]
    return [f"MXFP8: weights de-quantised to 16 bits for the GEMMs ({engine} {p.workload.engine_version or 'current'} "
            f"on {gpu.name}: MXFP8 GEMMs need Blackwell's block-scaled tensor cores and vLLM >= 0.17 / SGLang >= "
            "0.5.9)"]


def int8_gemm_note(p: Plan, gpu: GPU) -> list[str]:
    """How an int8 (W8A8) model's GEMMs run in an inference plan (`performance.gemm_dtype_on`): int8 x int8 at the
    GPU's int8 tensor rate under the engines with int8 GEMMs (quant.INT8_GEMM_ENGINES: vLLM's CUTLASS
    `cutlass_scaled_mm`) on NVIDIA GPUs from Turing on; nothing is said elsewhere (de-quantised, as before)."""
    found = _inference_gemm_dtype(p, gpu, "int8")
    if found is None or found[1] != "int8":
        return []
    return [f"int8 (W8A8): {found[0]} runs int8 x int8 GEMMs (activations quantised per token on the fly) at "
            f"{gpu.name}'s int8 rate ({gpu.int8_tops_dense:g} dense TOPS); for int8 weights with 16-bit "
            "activations write int8-wo"]


def trtllm_chunked_context_note(p: Plan) -> str:
    """What `enable_chunked_prefill` means on a TensorRT-LLM plan: its chunked context
    (`engines.trtllm_chunked_context_budget`, which `serving.prefill_budget` uses; off by default in
    TensorRT-LLM), with the iteration's token budget, max_num_tokens."""
    from mlrig.estimators.engines import trt_llm_pre_xqa, trtllm_chunked_context_budget

    w = p.workload
    if trt_llm_pre_xqa(w.engine_version):
        return (f"enable_chunked_prefill: no effect on TensorRT-LLM {w.engine_version} (before 0.8 mlrig prices "
                "static batches)")
    budget = trtllm_chunked_context_budget(w.enable_chunked_prefill, w.engine_version, w.max_num_seqs,
                                           w.max_model_len, w.max_num_batched_tokens)
    if w.enable_chunked_prefill:
        given = "max_num_batched_tokens" if w.max_num_batched_tokens is not None else "its default"
        return (f"enable_chunked_prefill on TensorRT-LLM = its chunked context (trtllm-bench --enable_chunked_context, "
                f"LLM API / trtllm-serve enable_chunked_prefill; off by default): in serving loads prompts are "
                f"prefilled in chunks beside the running requests, max_num_tokens {budget:,} tokens per iteration "
                f"({given})")
    if budget is None:
        return ("enable_chunked_prefill = false on TensorRT-LLM: chunked context off (its default), each prompt "
                "prefilled whole")
    return (f"enable_chunked_prefill = false on TensorRT-LLM: chunked context off (its default); prompts share "
            f"iterations of max_num_tokens {budget:,} with the running requests, as with it unset")


# Training sequence length when a fine-tune or pretrain plan gives none (no training.seq_len, no workload
# context/prompt/output): what users of the frameworks run, not inference's 512 + 128 request.
# Fine-tuning: 2,048 tokens, capped at the model's maximum. LLaMA-Factory's `cutoff_len` defaults to 2048
# (hiyouga/LLaMA-Factory src/llamafactory/hparams/data_args.py, and v1/config/data_args.py, 2025), between
# TRL's SFTConfig `max_length` default of 1024 (trl/trainer/sft_config.py, TRL 0.16+; before it,
# `max_seq_length` None meant min(1024, the tokenizer's model_max_length)) and axolotl's Llama-3 example
# configs' `sequence_len: 4096` with sample_packing (axolotl examples/llama-3/qlora.yml, lora-8b.yml).
# Pretraining: the model's own training context, its max_position_embeddings capped at 8,192. Models whose
# config states a long context got it by a later long-context stage, not in pretraining: Llama 3 was pretrained
# on 8,192-token sequences (Meta, "Introducing Meta Llama 3", ai.meta.com/blog/meta-llama-3, 2024-04-18) and
# Llama 3.1's config keeps that as rope_scaling.original_max_position_embeddings = 8192 under its 131,072;
# Megatron-LM's Llama-3 8B recipe trains at --seq-length 8192 (examples/llama/train_llama3_8b_h100_fp8.sh).
# Shorter models keep their own (GPT-2 1,024, Llama-2 4,096).
FINETUNE_SEQ_LEN_DEFAULT = 2048
PRETRAIN_SEQ_LEN_CAP = 8192


def training_seq_len_default(task: str, max_position_embeddings: int | None) -> int:
    """The sequence length a fine-tune or pretrain plan that gives none is priced at
    (FINETUNE_SEQ_LEN_DEFAULT / PRETRAIN_SEQ_LEN_CAP above: LLaMA-Factory's cutoff_len, the model's own
    training context), never above the model's maximum."""
    cap = PRETRAIN_SEQ_LEN_CAP if task == "pretrain" else FINETUNE_SEQ_LEN_DEFAULT
    return min(cap, max_position_embeddings) if max_position_embeddings else cap


def default_seq_len(arch: ModelArch, p: Plan) -> int | None:
    """`training_seq_len_default` for a training plan that states no length (no training.seq_len, no
    workload context_tokens, and prompt/output at inference's defaults: a plan may give its sequence as
    those instead); None for one that states it, and for inference. Read from the values, not from which
    fields were set, so a copy of the plan (grid.copy_with sets every field it copies) reads the same."""
    from mlrig.workload import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS

    w, t = p.workload, p.training
    if w.task == "inference" or t is None or t.seq_len is not None or w.context_tokens is not None:
        return None
    if (w.prompt_tokens, w.output_tokens) != (DEFAULT_PROMPT_TOKENS, DEFAULT_OUTPUT_TOKENS):
        return None
    return training_seq_len_default(w.task, arch.max_position_embeddings)


def seq_len_note(arch: ModelArch, task: str, seq_len: int) -> str:
    """The note of a plan priced at `default_seq_len`: the length, why, and the flag."""
    limit = arch.max_position_embeddings
    if task == "pretrain":
        why = (f"the model's training context: max_position_embeddings {limit:,}, capped at {PRETRAIN_SEQ_LEN_CAP:,}"
               if limit and limit > PRETRAIN_SEQ_LEN_CAP else
               f"the model's training context, max_position_embeddings {limit:,}" if limit else
               f"a {PRETRAIN_SEQ_LEN_CAP:,}-token pretraining context; the model states no maximum")
    else:
        capped = f", capped at the model's maximum {limit:,}" if limit and limit < FINETUNE_SEQ_LEN_DEFAULT else ""
        why = f"LLaMA-Factory's cutoff_len default{capped}; TRL's max_length default is 1,024, axolotl's examples 4,096"
    return (f"no --seq-len given: training sequences of {seq_len:,} tokens assumed ({why}); pass --seq-len to match "
            "your data")


def training_seq_len(arch: ModelArch, p: Plan) -> int:
    """The sequence length a training plan is priced at: training.seq_len, else `default_seq_len`, else the
    workload's context (a plan that gives its length as context/prompt/output)."""
    given = p.training.seq_len if p.training is not None else None
    return given or default_seq_len(arch, p) or p.workload.context


def with_seq_len(arch: ModelArch, p: Plan) -> Plan:
    """`p` with `default_seq_len` filled in as training.seq_len (the plan itself where it states a length)."""
    seq = default_seq_len(arch, p)
    if seq is None:
        return p
    assert p.training is not None
    return p.model_copy(update={"training": p.training.model_copy(update={"seq_len": seq})})


def check_setup(arch: ModelArch, p: Plan) -> list[str]:
    """Refuse what the model or the engine cannot do, in one line naming the limit (MlrigError);
    return warnings for what is allowed but risky.
    - A context above the model's maximum (`max_position_embeddings`, after any rope scaling its
      config declares) is an error, or with `allow_long_context` a warning naming the rope scaling
      factor needed; learned position tables (GPT-2, OPT) cannot be extended at all.
    - Tensor parallelism splits attention heads across GPUs: the query heads must divide by TP, and
      the KV heads must divide by TP or TP by them (vLLM replicates KV heads when TP > KV heads;
      Megatron-LM's and vLLM's own checks)."""
    notes: list[str] = []
    w, hw = p.workload, p.hardware
    seq_default = default_seq_len(arch, p)
    if seq_default is not None:
        # said per plan (not among `prepare`'s notes, which `mlrig eval` shares across plans of one shape)
        notes.append(seq_len_note(arch, p.workload.task, seq_default))
    t = p.training
    if (w.task != "inference" and t is not None and t.activation_checkpointing is None and t.gradient_checkpointing
            and "gradient_checkpointing" not in t.model_fields_set):
        # the default (TrainingSpec.gradient_checkpointing) moves both memory and step time (HFU > MFU): say it
        notes.append("no --checkpointing given: full activation checkpointing assumed (what torchtune's and axolotl's "
                     "example configs turn on; HF Trainer's own default is off), recomputing the forward pass in "
                     "the backward; pass --no-checkpointing, or --activation-checkpointing selective")
    # Inference only: fine-tuning past the trained length is how long-context models are made
    # (MLPerf's Llama-2-70B LoRA trains at 8192 on a 4096-token model).
    # The last generated token is never fed back, so it needs no position of its own.
    held = w.context_tokens or (w.prompt_tokens + max(0, w.output_tokens - 1))
    ctx = max(held, w.max_model_len or 0) if w.task == "inference" else 0
    limit = arch.max_position_embeddings
    if limit and ctx > limit:
        name = arch.hf_id or arch.id
        if arch.learned_position_embeddings:
            raise MlrigError(f"context {ctx:,} tokens exceeds {name}'s maximum of {limit:,}: its position table is "
                             "learned and cannot be stretched; lower --context/--prompt/--output")
        factor = ctx / limit
        if not w.allow_long_context:
            raise MlrigError(f"context {ctx:,} tokens exceeds {name}'s maximum of {limit:,} "
                             "(max_position_embeddings); lower it, or pass --allow-long-context "
                             f"(needs rope scaling x{factor:.3g}, e.g. YaRN)")
        notes.append(f"context {ctx:,} is above the model's maximum {limit:,}: it needs rope scaling "
                     f"x{factor:.3g} (e.g. YaRN / --rope-scaling); quality beyond {limit:,} is not guaranteed")
    if w.task == "inference" and w.gpu_memory_utilization is not None:
        from mlrig.estimators.memory import _MODELLED

        engine = (w.engine or "").lower()
        if runs_llama_cpp(engine) or engine in _MODELLED:
            # a note, not an error: `compare --engine vllm --engine llama.cpp --gpu-memory-utilization 0.95`
            # is a fair question, and only the serving engines' rows take the reservation
            notes.append(f"gpu_memory_utilization has no effect on {w.engine}: it allocates what it needs (weights, "
                         "KV cache, buffers); the reservation is a serving engine's (vLLM, SGLang, TRT-LLM, LMDeploy, "
                         "TGI)")
    if w.task == "inference" and w.num_scheduler_steps is not None:
        from mlrig.estimators.engines import vllm_multi_step

        if not (w.engine or "").lower().startswith("vllm"):
            raise MlrigError(f"num_scheduler_steps is vLLM's multi-step scheduling (--num-scheduler-steps); {w.engine} "
                             "has none: drop it or pass --engine vllm")
        if w.num_scheduler_steps > 1 and not vllm_multi_step(w.engine_version):
            notes.append(f"num_scheduler_steps has no effect: vLLM {w.engine_version or 'current'} has no multi-step "
                         "scheduling (0.6.0 to 0.10.0 only; pass --engine-version 0.6.x)")
        elif w.num_scheduler_steps > 1:
            notes.append(f"multi-step scheduling: vLLM's per-sequence host time spread over {w.num_scheduler_steps} "
                         "decode steps; a request arriving meanwhile waits for them (TTFT under load not adjusted)")
    chunk_switch = w.enable_chunked_prefill is not None
    engine_name = (w.engine or "").lower()
    if w.task == "inference" and chunk_switch and engine_name.startswith(("trt", "tensorrt")):
        notes.append(trtllm_chunked_context_note(p))
    elif w.task == "inference" and chunk_switch and not engine_name.startswith("vllm"):
        notes.append("enable_chunked_prefill is vLLM's switch (--enable-chunked-prefill) and TensorRT-LLM's "
                     f"chunked context: no effect on {w.engine}")
    if w.task == "inference" and not w.cuda_graphs:
        notes.append("no CUDA / HIP graphs (cuda_graphs = false): each decode step launches its kernels from the host "
                     "(vLLM, SGLang, TGI, llama.cpp on NVIDIA: priced per kernel and layer; other engines and Intel "
                     "GPUs: no change)")
    if w.task == "inference" and hw.expert_parallel > 1:
        from mlrig.estimators.expert_parallel import EP_ENGINES

        if not (w.engine or "").lower().startswith(EP_ENGINES):
            raise MlrigError(f"expert_parallel needs a serving engine with expert parallelism "
                             f"({', '.join(EP_ENGINES)}); {w.engine} has none: drop --ep or pass --engine vllm")
        if not arch.is_moe:
            notes.append("expert_parallel ignored: the model has no routed experts")
        else:
            ep, tp_ = hw.expert_parallel, hw.tensor_parallel
            note = (f"expert parallel {ep}: {-(-arch.num_experts // ep)} whole routed experts per GPU (of "
                    f"{arch.num_experts}); a decode step waits for the GPU whose experts its tokens touch most")
            if ep > tp_:
                note += (f"; attention data-parallel over {ep // tp_} groups of TP {tp_}: each holds the dense "
                         f"weights and its own sequences, and every MoE layer dispatches and combines tokens "
                         f"all-to-all; the KV capacity shown is one group's (the deployment holds {ep // tp_}x)")
            notes.append(note)
    tp = hw.tensor_parallel
    if tp > 1:
        heads, kv = arch.num_heads, arch.num_kv_heads or arch.num_heads
        if not tp_divides_heads(arch, tp):
            ok = [t for t in range(1, min(heads, 64) + 1) if tp_divides_heads(arch, t)]
            raise MlrigError(f"tensor_parallel {tp} does not divide {arch.hf_id or arch.id}'s {heads} attention "
                             f"heads / {kv} KV heads; use one of {', '.join(map(str, ok[:8]))}")
    return notes


def tp_divides_heads(arch: ModelArch, tp: int) -> bool:
    """Whether tensor parallelism `tp` splits the attention heads evenly: TP must divide the query heads, and
    divide the KV heads or be a multiple of them (each GPU then holds a replicated KV head), as vLLM's
    `ParallelConfig` / Megatron require."""
    heads, kv = arch.num_heads, arch.num_kv_heads or arch.num_heads
    return heads % tp == 0 and (kv % tp == 0 if kv >= tp else tp % kv == 0)


def _smaller_precision_hint(precision: str) -> str:
    """'use a smaller --precision (...), or ' naming only serving formats with fewer bits per weight than the
    plan's own (an FP8 plan is not told to try fp8); '' when none is smaller."""
    from mlrig import quant

    bits = quant.bits_per_weight(precision)
    smaller = [q for q in ("fp8", "awq", "gptq") if quant.bits_per_weight(q) < bits]
    return f"use a smaller --precision ({', '.join(smaller)}), or " if smaller else ""



def _engine_reservation_gib(p: Plan, engine: str, capacity_gib: float, vendor: str) -> float:
    """The memory a paged engine reserves on one GPU: vLLM's gpu_memory_utilization (its release's default when not
    given) of the CUDA driver's total (memory.vllm_reserved_gib), the other engines' fraction (0.9) of the card."""
    if engine == "vllm":
        from mlrig.estimators.memory import vllm_reserved_gib

        return vllm_reserved_gib(p, capacity_gib, vendor)
    return capacity_gib * (p.workload.gpu_memory_utilization or 0.9)


def _sglang_refusal(p: Plan, memory: Any, gpu: GPU, arch: ModelArch | None = None) -> str | None:
    """Why SGLang would not run this setup, where the reason is its own: the weights exceed its mem_fraction_static
    reservation, or the activations and CUDA graphs exceed what the reservation leaves of the card (it runs out of
    memory: memory.sglang_runtime_bytes). None otherwise (the KV pool check is shared with the other engines)."""
    from mlrig.estimators.memory import sglang_mem_fraction

    b = memory.breakdown
    frac = sglang_mem_fraction(p, gpu, arch)
    reserved_gib = frac * b.gpu_capacity_gib
    rest_gib = b.gpu_capacity_gib - reserved_gib
    if b.weights_gib + b.overhead_gib > reserved_gib:
        share = (b.weights_gib + b.overhead_gib) / b.gpu_capacity_gib + 0.01
        fix = ((f"raise --gpu-memory-utilization (SGLang's mem_fraction_static) to {share:.2f} or more (it leaves "
                f"no KV pool below that), "
                if share <= 0.95 else "") + _smaller_precision_hint(p.workload.precision) + "add GPUs")
        why = f"the weights exceed its mem_fraction_static={frac:.3g} reservation ({reserved_gib:.1f} GiB)"
        return f"sglang would refuse to start: {why}; no speed is given. {fix[0].upper()}{fix[1:]}"
    if b.activations_gib > rest_gib:
        lower = (b.gpu_capacity_gib - b.activations_gib) / b.gpu_capacity_gib - 0.01
        return (f"sglang would run out of memory: activations and CUDA graphs need {b.activations_gib:.1f} GiB beside "
                f"the weights and KV pool, more than the {rest_gib:.1f} GiB mem_fraction_static={frac:.3g} leaves; no "
                f"speed is given. Lower --gpu-memory-utilization (SGLang's mem_fraction_static) to {lower:.2f} or "
                "less, or pass a smaller --max-num-batched-tokens (SGLang's --chunked-prefill-size)")
    return None


def vllm_int8_refusal(p: Plan, engine: str, gpu: GPU) -> str | None:
    """vLLM has no W8A8 int8 GEMM on NVIDIA Blackwell: its docs (docs/features/quantization/int8.md, "Blackwell GPU
    Limitation: INT8 is not supported on compute capability >= 100 (e.g., RTX 6000 Blackwell). Use FP8 quantization
    instead"); its CUTLASS `cutlass_scaled_mm` has int8 kernels for sm75 / sm80 / sm89 / sm90 only. None elsewhere."""
    from mlrig.quant import INT8_GEMM_ENGINES, parse_precision

    if (engine in INT8_GEMM_ENGINES and parse_precision(p.workload.precision).name == "int8"
            and gpu.vendor == "NVIDIA" and str(gpu.architecture or "").startswith("Blackwell")):
        return (f"{p.workload.engine} would refuse to start: it has no int8 (W8A8) GEMMs on Blackwell GPUs such as "
                f"{gpu.name}; no speed is given. Use fp8 (or int8-wo / gptq-int8 for 8-bit weights only)")
    return None


def engine_refusal(p: Plan, memory: Any, vendor: str, gpu: GPU | None = None,
                   arch: ModelArch | None = None) -> str | None:
    """Why a serving engine would refuse to start this setup (None if it starts). vLLM/SGLang/TRT-LLM
    size a KV pool at start-up and exit when weights + profiled activations exceed the reservation, or
    when the pool cannot hold one max_model_len sequence ("ValueError: ... max seq len ... is larger
    than the maximum number of tokens that can be stored in KV cache"); SGLang also runs out of memory when its
    activations exceed what its reservation leaves (`_sglang_refusal`, given the `gpu`). Such a setup gets no
    speed."""
    from mlrig.estimators.memory import PAGED_ENGINES

    if p.workload.task != "inference" or getattr(memory, "engine", "") not in PAGED_ENGINES:
        return None
    if gpu is not None:
        own_int8 = vllm_int8_refusal(p, getattr(memory, "engine", ""), gpu)
        if own_int8 is not None:
            return own_int8
    cap = memory.kv_cache_capacity_tokens or 0
    need = max(p.workload.context, p.workload.max_model_len or 0)
    if not memory.fits or cap < need:
        b = memory.breakdown
        if memory.engine == "sglang" and gpu is not None:
            own = _sglang_refusal(p, memory, gpu, arch)
            if own is not None:
                return own
        fixed_gib = b.weights_gib + b.activations_gib + b.overhead_gib
        if fixed_gib > _engine_reservation_gib(p, getattr(memory, "engine", ""), b.gpu_capacity_gib, vendor):
            why = "weights + profiled activations exceed its memory reservation"
            # a shorter context does not shrink the weights: the ways out are a larger reservation (while the
            # card holds them with ~5 % spare, vLLM's practical ceiling), fewer bytes per weight, more GPUs
            total_gib = b.gpu_capacity_gib
            if memory.engine == "vllm":  # vLLM's share is of the CUDA driver's total (memory.driver_total_gib)
                from mlrig.estimators.memory import driver_total_gib

                total_gib = driver_total_gib(b.gpu_capacity_gib, vendor)
            share = fixed_gib / total_gib + 0.01
            fix = ((f"raise --gpu-memory-utilization to {share:.2f} or more (it leaves no KV pool below that), "
                    if share <= 0.95 else "") + _smaller_precision_hint(p.workload.precision) + "add GPUs")
        else:
            why = f"its KV pool holds {cap:,} tokens, fewer than one {need:,}-token sequence (max_model_len)"
            knob = ("--gpu-memory-utilization (SGLang's mem_fraction_static)" if memory.engine == "sglang"
                    else "--gpu-memory-utilization")
            fix = f"lower the context / --max-model-len, raise {knob}, or add GPUs"
        return f"{p.workload.engine} would refuse to start: {why}; no speed is given. {fix[0].upper()}{fix[1:]}"
    return None


def evaluate_case(obj: Any, *, plan: Plan | None = None, arch: ModelArch | None = None,
                  gpu: GPU | None = None) -> PlanResult:
    """Like `evaluate`, but never raises: a bad case comes back with `error` set (for batch runs).
    `plan`, `arch`, `gpu`: `parse_plan(obj)`, its model and its GPU, when the caller has them already
    (`mlrig.grid`: plans of one shape share one model and GPU)."""
    case_id = obj.get("id") if isinstance(obj, dict) else None
    try:
        return evaluate(obj if plan is None else plan, arch=arch, gpu=gpu)
    except MlrigError as exc:
        return PlanResult(id=case_id if isinstance(case_id, str) else None, error=str(exc))
    except Exception as exc:  # a bug must not stop a batch; say so plainly
        return PlanResult(id=case_id if isinstance(case_id, str) else None,
                          error=f"internal error ({type(exc).__name__}: {exc}); please report it")


def limits(plan: Plan | dict[str, Any], *, arch: ModelArch | None = None,
           gpu: GPU | None = None) -> dict[str, int | None]:
    """The inverse questions: largest batch and context that fit, fewest GPUs of this kind."""
    from mlrig.estimators.replicas import replica_plan, serving_replicas
    from mlrig.estimators.resolved import resolve

    p = parse_plan(plan)
    arch = arch or resolve_arch(p)
    gpu = gpu or resolve_hardware(p)
    p = with_seq_len(arch, with_defaults(p, gpu, arch)[0])
    n_replicas = serving_replicas(p)
    if n_replicas == 1:
        return resolved_limits(resolve(arch, p, gpu))
    # data-parallel replicas: one replica's limits; a static batch splits over them, so the largest is R x one's
    one = resolved_limits(resolve(arch, replica_plan(p, n_replicas), gpu))
    batch = one["max_batch_size"]
    return {**one, "max_batch_size": None if batch is None else batch * n_replicas}


def resolved_limits(r: ResolvedPlan) -> dict[str, int | None]:
    """`limits` of a plan resolved with its defaults taken (as `resolve_plan` gives it): the three
    questions asked of one resolution."""
    from mlrig.estimators.memory import fewest_gpus, largest_batch, longest_context

    arch, p = r.arch, r.plan
    if arch.max_position_embeddings and not p.workload.allow_long_context and p.workload.task == "inference":
        ctx_max = longest_context(r, limit=arch.max_position_embeddings)  # check_setup's limit
    else:
        ctx_max = longest_context(r)
    return {
        "max_batch_size": largest_batch(r),
        "max_context_tokens": ctx_max,
        "min_gpus": fewest_gpus(r),
    }
