"""Shared rendering helpers for commands: JSON output and the rich console."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import typer

from mlrig.units import parse_token_count, parse_usd

T = TypeVar("T")


def print_json(obj: Any) -> None:
    """Print pydantic models, lists of them, or plain data as JSON on stdout (NaN/infinity as null)."""
    from pydantic import BaseModel

    from mlrig.jsonout import json_ready

    def conv(o: Any) -> Any:
        if isinstance(o, BaseModel):
            return o.model_dump(mode="json")
        if isinstance(o, list | tuple):
            return [conv(x) for x in o]
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        return o

    # one write: json.dump would call write() once per token (80k calls for `fit --json`, 0.4 s unbuffered)
    sys.stdout.write(json.dumps(json_ready(conv(obj)), indent=2, allow_nan=False) + "\n")


def console() -> Any:
    from rich.console import Console

    return Console()


# ---- token counts: mlrig.units.parse_token_count (plan files read them the same way) ----

_MEMORY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(gib|gb|g)?\s*$", re.IGNORECASE)


def parse_memory_gib(text: str | float, flag: str) -> float:
    """A memory size in GiB: '24' or '24GiB' as given; '24GB' (10^9 bytes, as shops and spec sheets write it)
    converted, 22.35 GiB. A bare 'G' is read as GiB. Anything else is a one-line MlrigError naming the flag."""
    from mlrig.errors import MlrigError

    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    m = _MEMORY_RE.match(str(text))
    if m is None:
        raise MlrigError(f"{flag}: cannot read {text!r} as a memory size; give GiB as a number (24), or 24GiB / 24GB")
    value = float(m.group(1))
    return value * 1e9 / 2**30 if (m.group(2) or "").lower() == "gb" else value


def cli_parser(plain: Callable[[str], T]) -> Callable[[str], T]:
    """A typer `parser` from `plain`, a parser that raises MlrigError: on the command line bad input is one
    line (`mlrig: error: ...`) and its exit status, not a usage panel. `plain` stays reachable as the
    parser's `.plain` for callers that must not exit (`setup_flag_table`: `recommend`, also under `mlrig web`)."""

    def parse(value: str) -> T:
        from mlrig.errors import MlrigError

        try:
            return plain(value)
        except MlrigError as exc:
            typer.echo(f"mlrig: error: {exc}", err=True)
            raise SystemExit(exc.exit_code) from None

    parse.plain = plain  # type: ignore[attr-defined]
    return parse


def parse_watts(text: str | float, flag: str) -> float:
    """A power in W ('300', '300W'): a finite number above 0, else a one-line MlrigError naming the flag (not the plan
    field it fills)."""
    from mlrig.errors import MlrigError

    raw = str(text).strip().lower().removesuffix("w").strip()
    try:
        value = float(raw)
    except ValueError:
        raise MlrigError(f"{flag}: cannot read {text!r} as a power in W; give e.g. {flag} 300") from None
    if not math.isfinite(value) or value <= 0:
        raise MlrigError(f"{flag}: {text!r} is not a positive number of W; give e.g. {flag} 300")
    return value


def memory_gib(flag: str) -> Callable[[str], float]:
    """A typer `parser` for memory-size options (`--min-memory 24GB`)."""
    return cli_parser(lambda value: parse_memory_gib(value, flag))


def parse_fraction(text: str | float, flag: str) -> float:
    """A share of the card: '0.9' or '90%' -> 0.9. A bare number above 1 ('90', meant as per cent) is a
    one-line MlrigError giving both spellings: read as 90x the card it could only be refused later, with
    the plan field's name and not the flag's."""
    from mlrig.errors import MlrigError

    raw = str(text).strip()
    pct = raw.endswith("%")
    try:
        value = float(raw.removesuffix("%"))
    except ValueError:
        raise MlrigError(f"{flag}: cannot read {text!r} as a fraction; give e.g. 0.9 (or 90%)") from None
    if pct:
        value /= 100
    if 1 < value <= 100 and not pct:
        raise MlrigError(f"{flag}: {text!r} is above 1, the whole card; for {value:g} per cent give {value / 100:g} "
                         f"(or {value:g}%)")
    if not 0 < value <= 1:
        raise MlrigError(f"{flag}: {text!r} is not a fraction of the card in (0, 1]; give e.g. 0.9 (or 90%)")
    return value


def fraction(flag: str) -> Callable[[str], float]:
    """A typer `parser` for a share of the card (`--gpu-memory-utilization 0.9` or `90%`)."""
    return cli_parser(lambda value: parse_fraction(value, flag))


def token_count(flag: str, binary: bool = True) -> Callable[[str], int]:
    """A typer `parser` for token-count options: `--context 8k`. Bad input is one line
    (`mlrig: error: --context: ...`) and exit status 2, not a usage panel. (A parser, not a click
    ParamType: typer vendors its own click, which the core install does not otherwise carry.)"""
    return cli_parser(lambda value: parse_token_count(value, binary=binary, flag=flag))


def parse_positive_int(text: str | int, flag: str, what: str) -> int:
    """A count that must be 1 or more (GPUs, sequences, parallel ranks) as given on the command line. A bad value
    is one line naming the flag the user typed ('-n/--count'), not the plan field it fills (hardware.count)."""
    from mlrig.errors import MlrigError

    try:
        value = int(str(text).strip().replace("_", ""))
    except ValueError:
        raise MlrigError(f"{flag}: cannot read {text!r} as a whole number of {what}; give e.g. {flag.split('/')[-1]} 2"
                         ) from None
    if value < 1:
        raise MlrigError(f"{flag} must be at least 1 (got {value}): it is the number of {what}")
    return value


def positive_int(flag: str, what: str) -> Callable[[str], int]:
    """A typer `parser` for counts of 1 or more (`parse_positive_int`)."""
    return cli_parser(lambda value: parse_positive_int(value, flag, what))


def usd(flag: str) -> Callable[[str], float]:
    """A typer `parser` for dollar amounts (`--budget 2k`, `--budget '$2,000'`): mlrig.units.parse_usd."""
    return cli_parser(lambda value: parse_usd(value, flag))


# ---- workload options shared by plan / fit / compare (typer reads these Annotated aliases) ----

GpuOpt = Annotated[str | None, typer.Option("--gpu", "-g", help="GPU name: 'RTX 4090', 'H100 SXM', NVML names...")]
GpuSpecOpt = Annotated[str | None, typer.Option(
    "--gpu-spec", help="figures of a card not in the catalog, or replacing --gpu's: "
    "memory_gib=32,bandwidth_gb_s=1792,bf16_tflops=209 (also fp16/fp8/fp4_tflops, int8_tops, fp32_tflops, "
    "tdp_w, nvlink_gb_s, hardware_class, name)")]
CountOpt = Annotated[int | None, typer.Option("--count", "-n", help="GPUs per node", metavar="INTEGER",
    parser=positive_int("-n/--count", "GPUs per node"))]
NodesOpt = Annotated[int | None, typer.Option("--nodes", help="nodes", metavar="INTEGER",
    parser=positive_int("--nodes", "nodes"))]
TaskOpt = Annotated[str | None, typer.Option("--task", "-t", help="inference | finetune | pretrain")]
PrecisionOpt = Annotated[str | None, typer.Option(
    "--precision", "--quant", "-q", help="bf16 fp16 fp8 int8 int4 q8_0 q6_k q5_k_m q4_k_m q4_0 nf4 awq gptq mxfp4 ...")]
KvPrecisionOpt = Annotated[str | None, typer.Option("--kv-precision", help="KV-cache dtype (default: compute dtype)")]
EngineOpt = Annotated[str | None, typer.Option(
    "--engine", "-e", help="vllm | sglang | trt-llm | lmdeploy | tgi | llama.cpp | ollama | mlx | transformers | "
    "exllamav2 | mlc | gpt-fast | tinychat; lm-studio, llamafile and koboldcpp run as llama.cpp")]
BatchOpt = Annotated[int | None, typer.Option("--batch", "-b", help="concurrent sequences / micro-batch",
    metavar="INTEGER", parser=positive_int("-b/--batch", "concurrent sequences (training: sequences per micro-batch)"))]
PromptOpt = Annotated[int | None, typer.Option("--prompt", help="prompt tokens (8192 or 8k; default 512, or with "
    "--context alone the context less the output)",
    metavar="<tokens>", parser=token_count("--prompt"))]
OutputOpt = Annotated[int | None, typer.Option("--output", help="generated tokens (8192 or 8k; default 128, at "
    "most a quarter of --context)",
    metavar="<tokens>", parser=token_count("--output"))]
ContextOpt = Annotated[int | None, typer.Option("--context", "-c", help="tokens held per sequence (8192 or 8k)",
    metavar="<tokens>", parser=token_count("--context"))]
GpuMemUtilOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-utilization", help="the engine's reservation, a share of the card: 0.9 or 90% (vLLM's "
    "gpu_memory_utilization, SGLang's mem_fraction_static)", metavar="<fraction>",
    parser=fraction("--gpu-memory-utilization"))]
MethodOpt = Annotated[str | None, typer.Option("--method", "-m", help="full | lora | qlora (training; default: "
    "full where it fits, else lora, else qlora, said in the output)")]
LoraRankOpt = Annotated[int | None, typer.Option("--lora-rank", help="LoRA rank")]
OptimizerOpt = Annotated[str | None, typer.Option(
    "--optimizer", help="adamw | adamw-8bit | sgd | adafactor | bf16-adamw; adamw-fused / adamw-foreach: which "
    "AdamW (default: the framework's; none named: torch.optim.AdamW's foreach)")]
SeqLenOpt = Annotated[int | None, typer.Option("--seq-len", help="training sequence length (8192 or 8k)",
    metavar="<tokens>", parser=token_count("--seq-len"))]
CkptOpt = Annotated[bool | None, typer.Option(
    "--checkpointing/--no-checkpointing", help="activation (gradient) checkpointing")]
ZeroOpt = Annotated[int | None, typer.Option("--zero", help="ZeRO stage 0-3 (FSDP full shard = 3)")]
OffloadOpt = Annotated[str | None, typer.Option("--offload", help="none | optimizer | params (to host RAM)")]
TpOpt = Annotated[int | None, typer.Option("--tp", help="tensor-parallel degree", metavar="INTEGER",
    parser=positive_int("--tp", "tensor-parallel ranks"))]
PpOpt = Annotated[int | None, typer.Option("--pp", help="pipeline-parallel degree", metavar="INTEGER",
    parser=positive_int("--pp", "pipeline stages"))]
TokensOpt = Annotated[int | None, typer.Option("--tokens", help="tokens to train (time-to-train): 1e11, 100B, 15T",
    metavar="<tokens>", parser=token_count("--tokens", binary=False))]
GpuLayersOpt = Annotated[int | None, typer.Option(
    "--gpu-layers", "--ngl", help="llama.cpp -ngl: layers on the GPU, the rest on the CPU (default: all)")]
StorageOpt = Annotated[float | None, typer.Option(
    "--storage-gb-s", help="storage throughput for data and checkpoints, GB/s (training; default 2)")]
MtbfOpt = Annotated[float | None, typer.Option(
    "--mtbf-h", help="mean hours between job interruptions (training; default: Meta RSC-1's failure rate per GPU, "
    "arXiv 2410.21680)")]
DataBytesOpt = Annotated[float | None, typer.Option(
    "--data-bytes-per-token", help="bytes of training data per token (default: tokenised ids, 2 or 4)")]
LoadOpt = Annotated[str | None, typer.Option(
    "--load", help="static (one batch) | concurrency (--batch users, closed loop) | offline (--num-requests at once) "
    "| rate (--request-rate req/s)")]
RequestRateOpt = Annotated[float | None, typer.Option("--request-rate", help="requests/s, for --load rate")]
NumRequestsOpt = Annotated[int | None, typer.Option("--num-requests", help="requests of an offline / rate run")]
CachedPromptOpt = Annotated[int | None, typer.Option(
    "--cached-prompt-tokens", metavar="<tokens>", parser=token_count("--cached-prompt-tokens"),
    help="prompt tokens per request served from the engine's prefix cache (vLLM "
    "--enable-prefix-caching, SGLang's radix cache): no prefill for them, their KV still read (default 0)")]
LengthsOpt = Annotated[str | None, typer.Option(
    "--lengths", help="fixed (default: vllm bench serve's random dataset; a closed loop then runs in lock-step, "
    "every round a wave) | varied (ShareGPT-like lengths: only the opening round is a wave; an offline run ends "
    "in a drain of its longest requests) | uniform (a benchmark client's random dataset with a range ratio: lengths "
    "uniform around the means, --range-ratio)")]
RangeRatioOpt = Annotated[float | None, typer.Option(
    "--range-ratio", help="with --lengths uniform: lengths uniform in [L (1 - r), L (1 + r)] around the means L "
    "(vllm bench serve's --random-range-ratio); SGLang's bench_serving ratio r' is r = (1 - r') / (1 + r'), means "
    "L' (1 + r') / 2 (default 1: [0, 2 L], SGLang's default)")]
MaxOutputOpt = Annotated[int | None, typer.Option(
    "--max-output-tokens", metavar="<tokens>", parser=token_count("--max-output-tokens"),
    help="with --lengths varied: the client's max_tokens cap on each output; an offline run's drain of its longest "
    "requests ends there (default: uncapped)")]
MaxNumSeqsOpt = Annotated[int | None, typer.Option(
    "--max-num-seqs", help="engine's batch cap (vLLM --max-num-seqs, TRT-LLM max_batch_size)")]
MaxBatchedTokensOpt = Annotated[int | None, typer.Option(
    "--max-num-batched-tokens", metavar="<tokens>", parser=token_count("--max-num-batched-tokens"),
    help="engine's tokens per iteration (chunked prefill budget)")]
ChunkedPrefillOpt = Annotated[bool | None, typer.Option(
    "--enable-chunked-prefill/--no-enable-chunked-prefill",
    help="vLLM chunked prefill / TensorRT-LLM chunked context on/off (default: the engine's; vLLM V0 0.5.3+ "
         "chunks when max_model_len > 32K; TensorRT-LLM off)")]
MaxModelLenOpt = Annotated[int | None, typer.Option(
    "--max-model-len", metavar="<tokens>", parser=token_count("--max-model-len"), help="engine's context cap (vLLM)")]
SchedulerStepsOpt = Annotated[int | None, typer.Option(
    "--num-scheduler-steps", help="vLLM 0.6-0.10 multi-step scheduling: decode steps per scheduler call")]
EngineVersionOpt = Annotated[str | None, typer.Option(
    "--engine-version", help="engine release or build: 0.6.4, b3000, 4.38, 2024-06 (default: current)")]
EagerOpt = Annotated[bool | None, typer.Option(
    "--eager/--cuda-graphs", help="run the engine without CUDA/HIP graphs (vLLM --enforce-eager, SGLang "
    "--disable-cuda-graph): every decode kernel launched from the host (default: the engine's graphs)")]
LongContextOpt = Annotated[bool | None, typer.Option(
    "--allow-long-context", help="accept a context above the model's maximum (needs rope scaling)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON (PLAN-FORMAT.md result shape)")]
MarkdownOpt = Annotated[bool, typer.Option(
    "--markdown", help="print GitHub-flavoured Markdown tables (to paste into an issue)")]
ActCkptOpt = Annotated[str | None, typer.Option(
    "--activation-checkpointing", help="none | selective | full (training; --checkpointing means full)")]
LoraTargetsOpt = Annotated[str | None, typer.Option(
    "--lora-targets", help="comma list: q,k,v,o,gate,up,down, attention, mlp, embeddings, lm_head")]
ChunkedLossOpt = Annotated[bool | None, typer.Option(
    "--chunked-loss/--no-chunked-loss", help="loss in chunks, no full fp32 logits (default: on for torchtune)")]
ActOffloadOpt = Annotated[bool | None, typer.Option(
    "--activation-offload/--no-activation-offload", help="saved activations offloaded to host RAM")]
VppOpt = Annotated[int | None, typer.Option(
    "--virtual-pipeline-stages", help="interleaved 1F1B: model chunks per pipeline rank (Megatron "
    "--virtual-pipeline-model-parallel-size; default 1)")]
AttnKernelOpt = Annotated[str | None, typer.Option(
    "--attention-kernel", help="training: flash_attention_2 | flash_attention_3 | cudnn (default: the engine's; "
    "cudnn for NeMo / Megatron on Hopper+, else flash_attention_2)")]
Fp8DpaOpt = Annotated[bool | None, typer.Option(
    "--fp8-dot-product-attention/--no-fp8-dot-product-attention", help="training: attention in FP8 too "
    "(Transformer Engine / NeMo fp8_dot_product_attention, MLPerf FP8_DPA=1; cuDNN on Hopper and newer)")]
CudaGraphOpt = Annotated[bool | None, typer.Option(
    "--enable-cuda-graph/--no-enable-cuda-graph", help="training: forward and backward replayed from CUDA graphs "
    "(Megatron-Core / NeMo enable_cuda_graph; default: the engine's, on for Surogate and llm.q)")]
CpOpt = Annotated[int | None, typer.Option("--cp", help="context-parallel degree (sequence split across GPUs)")]
EpOpt = Annotated[int | None, typer.Option("--ep", help="expert-parallel degree (MoE experts split across GPUs; "
    "inference: vLLM --enable-expert-parallel, SGLang --ep-size; above --tp: data-parallel attention)")]
SpOpt = Annotated[bool | None, typer.Option(
    "--sp/--no-sp", help="Megatron sequence parallelism (with --tp): activations sharded by TP")]
TpOverlapOpt = Annotated[bool | None, typer.Option(
    "--tp-comm-overlap/--no-tp-comm-overlap", help="training: TP communication overlapped with the GEMMs "
    "(Megatron-Core / NeMo tp_comm_overlap, Transformer Engine userbuffers; needs --sp)")]
InterconnectOpt = Annotated[str | None, typer.Option(
    "--interconnect", help="links between the GPUs: pcie3 | pcie4 | pcie5 | nvlink | ... "
    "(mlrig/data/interconnects.json; default: what the GPU has); a PCIe link takes the card's transport (peer-to-peer "
    "on data-centre / workstation cards and Arc Pro, host-staged on GeForce); 'pcie4-p2p' / 'pcie4-nop2p' force P2P "
    "on / off (e.g. a VM without P2P); with --nodes, the network: ib-ndr, '4x roce-100g'")]
PowerLimitOpt = Annotated[float | None, typer.Option(
    "--power-limit-w", help="GPU power cap in W (nvidia-smi -pl); scales the compute peak", metavar="FLOAT",
    parser=cli_parser(lambda value: parse_watts(value, "--power-limit-w")))]


# ---- the serving setup: one definition for every command that takes one ----

# The engine and hardware keys of PLAN-FORMAT's "Keys published runs need" that describe a serving setup
# (CLI parameter name -> its option). `plan`, `serve`, `compare`, `fit` and `sweep` take all of them through
# `setup_options`, `recommend` through `recommend_setup_flags`, the web API through `web.schemas.SetupQuery`;
# `setup_fields` maps them to plan fields, so they mean the same on every command (tests/test_setup_parity.py).
SETUP_OPTIONS: dict[str, Any] = {
    "gpu_memory_utilization": GpuMemUtilOpt,
    "max_num_seqs": MaxNumSeqsOpt,
    "max_num_batched_tokens": MaxBatchedTokensOpt,
    "enable_chunked_prefill": ChunkedPrefillOpt,
    "max_model_len": MaxModelLenOpt,
    "engine_version": EngineVersionOpt,
    "num_scheduler_steps": SchedulerStepsOpt,
    "eager": EagerOpt,
    "ep": EpOpt,
    "allow_long_context": LongContextOpt,
    "lengths": LengthsOpt,
    "range_ratio": RangeRatioOpt,
    "cached_prompt_tokens": CachedPromptOpt,
    "max_output_tokens": MaxOutputOpt,
    "power_limit_w": PowerLimitOpt,
    "interconnect": InterconnectOpt,
}
# CLI parameter -> plan field where the names differ (`eager` is the negation of `cuda_graphs`).
SETUP_FIELD = {"ep": "expert_parallel", "eager": "cuda_graphs"}
# Plan section of the setup fields that are not [workload] keys (PLAN-FORMAT: an inference plan's
# expert_parallel lives in [hardware]; a training plan's moves from there to [training]).
SETUP_SECTION = {"expert_parallel": "hardware", "power_limit_w": "hardware", "interconnect": "hardware"}


def setup_flag_table() -> dict[str, tuple[str, str, Callable[[str], Any] | None, Any]]:
    """The serving-setup options as plain flags, for commands that parse their own arguments (`recommend`'s
    per-model workload flags): flag -> (section, plan field, converter of the value, value of a switch).
    A switch (`--eager`, `--cuda-graphs`, `--allow-long-context`) has no converter and takes no value."""
    from typing import get_args

    table: dict[str, tuple[str, str, Callable[[str], Any] | None, Any]] = {}
    for name, option in SETUP_OPTIONS.items():
        kind, info = get_args(option)[0], get_args(option)[1]
        field = SETUP_FIELD.get(name, name)
        section = SETUP_SECTION.get(field, "workload")
        decls = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str)]
        base = next(t for t in get_args(kind) if t is not type(None))
        if base is bool:
            on, _, off = decls[0].partition("/")
            negate = name == "eager"  # --eager means cuda_graphs = false
            table[on] = (section, field, None, not negate)
            if off:
                table[off] = (section, field, None, negate)
        else:
            # the parser's `plain` form raises MlrigError (the CLI form exits): `recommend` parses these
            # flags itself, also for `mlrig web`, where an exit would be a server error
            table[decls[0]] = (section, field, getattr(info.parser, "plain", info.parser) or base, None)
    return table


def setup_fields(**flags: Any) -> dict[str, Any]:
    """The serving-setup flags (`SETUP_OPTIONS` names; None = not given) as plan fields for
    `mlrig.planner.plan_from_fields`. An unknown name is a programming error (TypeError)."""
    unknown = set(flags) - set(SETUP_OPTIONS)
    if unknown:
        raise TypeError(f"not a serving-setup flag: {sorted(unknown)}")
    out: dict[str, Any] = {}
    for name in SETUP_OPTIONS:
        value = flags.get(name)
        if name == "eager" and value is not None:
            value = not value
        out[SETUP_FIELD.get(name, name)] = value
    return out


def setup_options(fn: Callable[..., Any], overrides: dict[str, Any] | None = None) -> Callable[..., Any]:
    """Give a typer command every serving-setup option (`SETUP_OPTIONS`, appended to its signature as
    keyword parameters) and pass their values to it together as `setup` (CLI names -> value or None):
    each command gets the same flags, help and parsing from this one definition. `overrides` replaces an
    option's definition for one command (`compare`'s --interconnect repeats, one per GPU)."""
    import functools
    import inspect

    sig = inspect.signature(fn, eval_str=True)  # the module's string annotations, resolved for typer
    params = [p for p in sig.parameters.values() if p.name != "setup"]
    options = {**SETUP_OPTIONS, **(overrides or {})}
    extra = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=option)
             for name, option in options.items()]
    at = next((i for i, p in enumerate(params) if p.name == "as_json"), len(params))  # --json stays last in --help

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        setup = {name: kwargs.pop(name, None) for name in SETUP_OPTIONS}
        return fn(*args, setup=setup, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=[*params[:at], *extra, *params[at:]])  # type: ignore[attr-defined]
    return wrapper


def missing_model_message(example: str, method: str | None) -> str:
    """The error for a command given neither a model nor a plan file. `-m` is --method in plan and trace but
    the model in compare and fit, so a model name given to -m is told where it belongs."""
    if method and method.lower() not in ("full", "lora", "qlora"):
        return (f"-m/--method takes full, lora or qlora, not {method!r}: give the model as the first argument "
                f"(e.g. {example})")
    return f"give a MODEL (e.g. {example}) or --file PLAN.toml"


def training_fields(*, activation_checkpointing: str | None = None, lora_targets: str | None = None,
                    chunked_loss: bool | None = None, activation_offload: bool | None = None,
                    cp: int | None = None, sp: bool | None = None,
                    attention_kernel: str | None = None, vpp: int | None = None,
                    fp8_dot_product_attention: bool | None = None,
                    enable_cuda_graph: bool | None = None, tp_comm_overlap: bool | None = None) -> dict[str, Any]:
    """The training keys of PLAN-FORMAT's "Keys published runs need", from their flags (--ep and
    --power-limit-w are serving-setup flags: `setup_fields`)."""
    targets = [t.strip() for t in lora_targets.split(",") if t.strip()] if lora_targets else None
    return {"activation_checkpointing": activation_checkpointing, "lora_targets": targets,
            "chunked_loss": chunked_loss, "activation_offload": activation_offload, "context_parallel": cp,
            "sequence_parallel": sp, "attention_kernel": attention_kernel, "virtual_pipeline_stages": vpp,
            "fp8_dot_product_attention": fp8_dot_product_attention, "enable_cuda_graph": enable_cuda_graph,
            "tp_comm_overlap": tp_comm_overlap}


def workload_fields(*, task: str | None = None, precision: str | None = None, kv_precision: str | None = None,
                    engine: str | None = None, batch: int | None = None, prompt: int | None = None,
                    output: int | None = None, context: int | None = None, method: str | None = None,
                    lora_rank: int | None = None, optimizer: str | None = None, seq_len: int | None = None,
                    checkpointing: bool | None = None, zero: int | None = None, offload: str | None = None,
                    tp: int | None = None, pp: int | None = None, count: int | None = None,
                    nodes: int | None = None, tokens: float | None = None, storage_gb_s: float | None = None,
                    mtbf_h: float | None = None, data_bytes_per_token: float | None = None,
                    gpu_layers: int | None = None, gpu_spec: str | None = None, load: str | None = None,
                    request_rate: float | None = None, num_requests: int | None = None,
                    **setup: Any) -> dict[str, Any]:
    """Map CLI flag names to plan field names (mlrig.planner.plan_from_fields places them); `setup` are
    the serving-setup flags (`SETUP_OPTIONS` names, mapped by `setup_fields`)."""
    if method is not None and task is None:
        task = "finetune"
    return {
        "task": task, "precision": precision, "kv_cache_precision": kv_precision, "engine": engine,
        "batch_size": batch, "prompt_tokens": prompt, "output_tokens": output, "context_tokens": context,
        "method": method, "lora_rank": lora_rank,
        "optimizer": optimizer, "seq_len": seq_len, "gradient_checkpointing": checkpointing,
        "zero_stage": zero, "offload": offload, "tensor_parallel": tp, "pipeline_parallel": pp,
        "count": count, "nodes": nodes, "tokens_to_train": tokens, "storage_gb_s": storage_gb_s,
        "mtbf_hours": mtbf_h, "data_bytes_per_token": data_bytes_per_token, "gpu_layers": gpu_layers,
        "gpu_spec": gpu_spec, "load": load, "request_rate": request_rate, "num_requests": num_requests,
        **setup_fields(**setup),
    }


def precision_text(precision: str | None, base_weights_precision: str | None) -> str:
    """A headline's precision. A QLoRA plan's precision is its compute dtype (the adapters and activations),
    while its frozen base is 4-bit NF4 (the result's `base_weights_precision`, planner.base_weights_precision):
    the headline says both, 'nf4 base + bf16 compute', not a bare 'bf16' that reads as 16-bit weights."""
    text = precision or "bf16"
    if base_weights_precision is None:
        return text
    from mlrig.quant import compute_dtype

    return f"{base_weights_precision} base + {compute_dtype(text)} compute"


def max_model_len_clause(limit_tokens: int | None) -> str:
    """What a "fits" headline adds when vLLM with its default --max-model-len (the model's maximum) would not
    start: the result's `max_model_len_limit_tokens` (planner.result_of), "" when there is none."""
    if limit_tokens is None:
        return ""
    return (f" with --max-model-len {limit_tokens} or less (vLLM's default, the model's maximum context, "
            "would not start)")


def limits_line(lims: Mapping[str, Any]) -> str:
    """The planner's limits (`plan_json`'s "limits") as one line, for the terminal and `--markdown` alike."""
    parts = []
    if lims.get("max_batch_size") is not None:
        parts.append(f"largest batch at this context: {lims['max_batch_size']:,}")
    if lims.get("max_context_tokens") is not None:
        parts.append(f"largest context at this batch: {lims['max_context_tokens']:,} tokens")
    parts.append(f"fewest GPUs of this kind: {lims.get('min_gpus') or '> 64'}")
    return "Limits: " + "; ".join(parts)


def fmt_num(x: float | None, digits: int = 1) -> str:
    """Human figure: thousands separators, None as a dash."""
    if x is None:
        return "—"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


# Bound names short enough for a table's last column ("memory-bandwidth" does not fit 80 columns).
SHORT_BOUND = {"memory-bandwidth": "bandwidth", "interconnect": "links"}
BAND_NAMES = {"decode_tok_s": "decode", "prefill_tok_s": "prefill", "ttft_ms": "TTFT",
              "train_tokens_per_s": "training"}


def band_kind(band: float, validation: Any) -> str:
    """What a figure's ± band is (planner.attach_validation): 'p90' when it is its validation scope's p90 error;
    the default band when the scope is too small to narrow it (scopes.SMALL_SCOPE_ROWS) or is not validated;
    the nearest scope's p90 for an unvalidated figure whose nearest scope misses more. `validation` is the
    figure's FigureValidation or its JSON dict (None or anything else: unknown, read as the default)."""
    from mlrig.validation.scopes import small_scope

    v = validation.model_dump() if hasattr(validation, "model_dump") else validation
    if not isinstance(v, Mapping):  # a result from elsewhere (an old or hand-written JSON): nothing to read
        v = {}
    if v.get("validated"):
        rows = int(v.get("rows") or 0)
        if small_scope(rows) and band > (v.get("p90_error") or 0.0) + 0.0005:
            return f"default band: only {rows} runs in its scope"
        return "p90"
    if v.get("nearest_p90_error") is not None and band <= v["nearest_p90_error"] + 0.0005:
        return "p90 of nearest scope"
    return "default band: not validated"


def is_overload_band(metric: str, band: float, rate_run: bool) -> bool:
    """Whether a figure's band is a rate run's one-sided overload band: a TTFT band above 100 % of a run that
    reports its capacity (serving.overload_ttft_band: near or past capacity the queue, not a scope's p90, sets it)."""
    return metric == "ttft_ms" and band > 1.0 and rate_run


def overload_band_text(band: float) -> str:
    """An overload band (`is_overload_band`) in words: a longer queue, never a negative TTFT."""
    return f"up to x{1.0 + band:.3g} if the capacity is lower"


def band_caption(figures: Sequence[tuple[dict[str, float], Mapping[str, Any]]],
                 rate_runs: Sequence[bool] = ()) -> str | None:
    """One line for a table of speeds: the widest ± band of each metric shown, and what that band is (`band_kind`:
    a scope's p90 error, or the default band where too few runs back it). `figures`: each row's error_band and
    its validation (keyed by figure, FigureValidation objects or their JSON dicts). `rate_runs`: which rows are
    rate runs (their result reports capacity_requests_per_s); a rate run's TTFT band above 100 % is the one-sided
    overload band (serving.overload_ttft_band), worded as `mlrig plan` words it: "up to xN if the capacity is
    lower"."""
    widest: dict[str, tuple[float, str]] = {}
    narrowest: dict[str, float] = {}  # rows of different scopes (LoRA ±14 %, QLoRA ±29 %): the range, not the max
    overload = 0.0  # the widest one-sided TTFT band of a rate run
    for i, (band, validation) in enumerate(figures):
        for metric, value in band.items():
            if is_overload_band(metric, value, i < len(rate_runs) and rate_runs[i]):
                overload = max(overload, value)
            elif metric in BAND_NAMES:
                narrowest[metric] = min(value, narrowest.get(metric, value))
                if value >= widest.get(metric, (-1.0, ""))[0]:
                    widest[metric] = (value, band_kind(value, validation.get(metric)))
    parts = [f"{BAND_NAMES[m]} ±{narrowest[m]:.0%} to ±{v:.0%} by row (widest: {kind})"
             if f"{narrowest[m]:.0%}" != f"{v:.0%}" else f"{BAND_NAMES[m]} ±{v:.0%} ({kind})"
             for m, (v, kind) in widest.items()]
    if overload:
        parts.append(f"TTFT {overload_band_text(overload)} (a rate near or past capacity)")
    return "bands: " + ", ".join(parts) if parts else None


def reserves_pool(capacity_gib: float, per_gpu_gib: float, headroom_gib: float) -> bool:
    """Whether a memory result is a serving engine's whole reservation (vLLM, SGLang, TRT-LLM, ... take
    gpu_memory_utilization x the card and fill what the weights leave with KV cache): its per-GPU figure is then the
    reservation and its headroom the KV pool beyond one sequence, not free memory (memory.estimate_memory)."""
    return abs(capacity_gib - per_gpu_gib - headroom_gib) > 0.01


def pooled_engines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The engines of the results (`--json` dicts) whose memory figure is a reservation (`reserves_pool`)."""
    out = []
    for res in results:
        m = res.get("memory") or {}
        cap, used, room = m.get("gpu_capacity_gib"), m.get("per_gpu_gib"), m.get("headroom_gib")
        if (isinstance(cap, int | float) and isinstance(used, int | float) and isinstance(room, int | float)
                and reserves_pool(cap, used, room)):
            out.append(res.get("engine") or "")
    return out


def reservation_caption(pooled_engines: Sequence[str], headroom_column: bool) -> str | None:
    """One line for a table with rows of serving engines that reserve memory (`reserves_pool`): why a 1B model
    'takes' 21.6 GiB of a 24 GiB card there. None when no row does."""
    if not pooled_engines:
        return None
    names = " / ".join(sorted(set(pooled_engines)))
    return (f"{names}: GiB is the engine's reservation (gpu_memory_utilization x memory; what the weights leave is "
            "KV cache), not the model's need" + ("; headroom: that KV pool beyond one sequence" if headroom_column
                                                 else ""))


def seq_len_caption(notes: list[list[str]]) -> str | None:
    """One line for a table of training plans priced at the default sequence length (planner.seq_len_note):
    the length(s) assumed and the flag; None when every plan gave its own."""
    import re

    lens = sorted({int(m.group(1).replace(",", "")) for plan_notes in notes for n in plan_notes
                   if (m := re.match(r"no --seq-len given: training sequences of ([\d,]+) tokens", n))})
    if not lens:
        return None
    return f"no --seq-len: {' / '.join(f'{x:,}' for x in lens)}-token sequences assumed"


def zero_default_caption(notes: list[list[str]]) -> str | None:
    """One line for a table with multi-GPU full fine-tunes sharded by default (`workload.sharded_by_default`,
    noted by planner.with_defaults); None when no row took that default."""
    from mlrig.workload import ZERO_DEFAULT_NOTE

    if not any(n.startswith(ZERO_DEFAULT_NOTE) for plan_notes in notes for n in plan_notes):
        return None
    return "full fine-tune: ZeRO 3 / FSDP assumed; --zero 0: DDP"


def default_method(notes: list[str]) -> str | None:
    """The training method a fine-tune took by default (planner.with_default_method's note), None if it named one."""
    for n in notes:
        if n.startswith("method: ") and "(default for " in n:
            return n.split()[1]
    return None


def method_default_caption(notes: list[list[str]]) -> str | None:
    """One line for a table whose fine-tunes took their GPUs' default method (shown beside each variant)."""
    if not any(default_method(plan_notes) for plan_notes in notes):
        return None
    return "method: full where it fits, else LoRA, else QLoRA (no --method given); --method to choose"


def narrow_table(title: str | None, columns: list[tuple[str, str]], rows: list[list[str]],
                 flexible: tuple[str, ...] = (), caption: str | None = None) -> Any:
    """A borderless rich Table for 80-column terminals: every column not in `flexible` is exactly as
    wide as its widest cell or header (figures are never cut with '…'); `flexible` columns (names) fold
    onto a second line when the terminal is narrow. `columns` are (header, justify) pairs; cells may hold
    rich markup."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, box=None, pad_edge=False, header_style="bold", caption=caption)
    for i, (col, just) in enumerate(columns):
        if col in flexible:
            t.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
        else:
            width = max([len(col), *(len(Text.from_markup(r[i]).plain) for r in rows)])
            t.add_column(col, justify=just, no_wrap=True, width=width)  # type: ignore[arg-type]
    for r in rows:
        t.add_row(*r)
    return t


def table_width(columns: list[str], rows: list[list[str]]) -> int:
    """Columns a narrow_table needs to show every cell on one line (2 spaces between columns)."""
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    return sum(widths) + 2 * (len(widths) - 1)


def shortfall_text(result: dict[str, Any]) -> str:
    """' (1,435 GiB short per GPU)' for a result that does not fit by memory; '' when its memory fits (the engine
    refuses it for another reason, which `plan` names) or its memory is not known."""
    headroom = (result.get("memory") or {}).get("headroom_gib")
    return f" ({-headroom:,.1f} GiB short per GPU)" if headroom is not None and headroom < 0 else ""


# ---- compare's price columns (the terminal table, --markdown and their footnote) ----

NO_PRICES = "prices: none of these GPUs has a card price in the book (`mlrig prices --coverage` says why)"


def price_cells(price: dict[str, Any] | None) -> list[str]:
    """The price and value cells of one row: '6,800' (a used price '300u'), '131'; '—' where there is none."""
    if not price:
        return ["—", "—"]
    usd = f"{price['usd']:,.0f}{'u' if price['condition'] == 'used' else ''}"
    return [usd, fmt_num(price.get("usd_per_tok_s"))]


def price_footnote(rows: list[dict[str, Any]], training: bool, bound_dropped: bool = False) -> str:
    """The line under a priced compare table: what the value column is, the prices' dates and age, that they are
    list (new) or used-market estimates, and where to re-check them."""
    priced = [r["price"] for r in rows if r.get("price")]
    dates = sorted({p["date"] for p in priced})
    ages = [p["age_days"] for p in priced if p.get("age_days") is not None]
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    age = f", {'up to ' if len(set(ages)) > 1 else ''}{max(ages) / 30.44:.0f} months old" if ages else ""
    used = " or used (u)" if any(p["condition"] == "used" for p in priced) else ""
    speed = "train tok/s" if training else "decode tok/s"
    none = "; — = not in the book" if any(not r.get("price") for r in rows) else ""
    dropped = "; bound column left out to fit" if bound_dropped else ""
    return (f"prices: list{used} estimates dated {when}{age} (re-check: `mlrig prices`); $ per {speed} = price of "
            f"the row's cards / {speed}, lower is better{none}{dropped}")
