"""The web API's inputs (query parameters named as the CLI's flags) and the shapes of its answers.

Inputs are pydantic models that FastAPI reads from the query string, so the OpenAPI schema, the
validation and the 422 errors (naming the parameter) all come from here. Ranges are checked where the
CLI checks them (the plan's own model, `mlrig.workload.Plan`, and the commands' checks), so an out-of-range
value gets the same message as on the command line. Strings are capped at 200 characters and lists
at 64 items: a model or GPU name is never longer, and fuzzy name matching on a huge string is slow.

Answers reuse the result models the CLI prints (`PlanResult`, `Recommendation`, `TcoResult`, ...); the
API returns the CLI's `--json` dict as it is and names these models for the schema.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mlrig.advisor.cost import TcoResult
from mlrig.advisor.recommend import Recommendation
from mlrig.diagnose.models import DiagnoseReport
from mlrig.estimators.performance import ServingPoint
from mlrig.estimators.serving import ConcurrencyLimits
from mlrig.fixes import Fix
from mlrig.results import PlanResult

Str = str  # every str field is capped by the model config below
NameList = list[str]


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=200, str_strip_whitespace=True)

    @field_validator("prompt", "output", "context", "seq_len", "max_num_batched_tokens", "max_model_len",
                     "cached_prompt_tokens", "max_output_tokens", mode="before", check_fields=False)
    @classmethod
    def _token_counts(cls, v: object) -> object:
        """Token counts as the CLI's flags take them: ?context=8k is 8,192 (mlrig.units.parse_token_count)."""
        from mlrig.workload import _token_field

        return _token_field(v)

    @field_validator("tokens", mode="before", check_fields=False)
    @classmethod
    def _total_tokens(cls, v: object) -> object:
        """Tokens to train as --tokens takes them: ?tokens=100B is 1e11 (k = 1000)."""
        from mlrig.workload import _token_field

        return _token_field(v, binary=False)


class WorkloadQuery(_Query):
    """Workload fields shared by plan, compare and the plan page (CLI flag names)."""

    task: Literal["inference", "finetune", "pretrain"] | None = Field(None, description="--task")
    precision: Str | None = Field(None, description="--precision: bf16 fp16 fp8 int8 int4 q8_0 q4_k_m nf4 awq ...")
    kv_precision: Str | None = Field(None, description="--kv-precision (default: the compute dtype)")
    engine: Str | None = Field(None, description="--engine: vllm sglang trt-llm llama.cpp transformers exllamav2 mlc")
    batch: int | None = Field(None, description="--batch: concurrent sequences / micro-batch")
    prompt: int | None = Field(None, description="--prompt tokens")
    output: int | None = Field(None, description="--output tokens")
    context: int | None = Field(None, description="--context: tokens held per sequence")
    tp: int | None = Field(None, description="--tp: tensor-parallel degree")
    count: int | None = Field(None, description="--count: GPUs per node")


class SetupQuery(_Query):
    """The serving-setup flags every serving command takes (`mlrig.commands._common.SETUP_OPTIONS`, same
    names; tests/test_setup_parity.py keeps the two lists equal)."""

    gpu_memory_utilization: float | None = Field(None, description="--gpu-memory-utilization (vLLM), (0, 1]")
    max_num_seqs: int | None = Field(None, description="--max-num-seqs: the engine's batch cap")
    max_num_batched_tokens: int | None = Field(None, description="--max-num-batched-tokens: tokens per iteration")
    enable_chunked_prefill: bool | None = Field(
        None, description="--enable-chunked-prefill (vLLM; TensorRT-LLM chunked context)")
    max_model_len: int | None = Field(None, description="--max-model-len: the engine's context cap (vLLM)")
    engine_version: Str | None = Field(None, description="--engine-version: 0.6.4, b3000, 4.38, 2024-06")
    num_scheduler_steps: int | None = Field(None, description="--num-scheduler-steps (vLLM 0.6-0.10 multi-step)")
    eager: bool | None = Field(None, description="--eager: no CUDA/HIP graphs (vLLM --enforce-eager)")
    ep: int | None = Field(None, description="--ep: expert-parallel degree (MoE)")
    allow_long_context: bool | None = Field(None, description="--allow-long-context (needs rope scaling)")
    lengths: Literal["fixed", "varied", "uniform"] | None = Field(
        None, description="--lengths: fixed | varied | uniform")
    range_ratio: float | None = Field(None, description="--range-ratio: uniform lengths' half-width over their mean")
    cached_prompt_tokens: int | None = Field(None, description="--cached-prompt-tokens (prefix cache)")
    max_output_tokens: int | None = Field(None, description="--max-output-tokens: max_tokens cap (varied lengths)")
    power_limit_w: float | None = Field(None, description="--power-limit-w: GPU power cap, W")
    interconnect: Str | None = Field(None, description="--interconnect: pcie4 (the card's P2P default) | pcie4-p2p | "
                                     "pcie4-nop2p | nvlink | ... (GPU links)")


class PlanFields(WorkloadQuery, SetupQuery):
    """`mlrig plan`'s flags but the model."""

    gpu: Str | None = Field(None, description="--gpu: 'RTX 4090', 'H100 SXM', ... (see /api/gpus)",
                            examples=["RTX 4090"])
    load: Literal["static", "concurrency", "offline", "rate"] | None = Field(None, description="--load")
    request_rate: float | None = Field(None, description="--request-rate: requests/s, for load=rate")
    num_requests: int | None = Field(None, description="--num-requests of an offline / rate run")
    method: Literal["full", "lora", "qlora"] | None = Field(None, description="--method (training)")
    lora_rank: int | None = None
    optimizer: Str | None = Field(None, description="adamw | adamw-8bit | sgd | adafactor | bf16-adamw")
    seq_len: int | None = None
    checkpointing: bool | None = None
    zero: int | None = Field(None, description="ZeRO stage 0-3")
    offload: Literal["none", "optimizer", "params"] | None = None
    pp: int | None = None
    nodes: int | None = None
    tokens: float | None = Field(None, description="tokens to train")
    gpu_layers: int | None = Field(None, description="llama.cpp -ngl")
    storage_gb_s: float | None = None
    mtbf_h: float | None = None
    data_bytes_per_token: float | None = None
    limits: bool = Field(True, description="also the largest batch / context and the fewest GPUs (--limits)")

    def flags(self) -> dict[str, Any]:
        """Keyword arguments for `mlrig.commands._common.workload_fields` (as `mlrig plan` passes them)."""
        return self.model_dump(exclude={"model", "gpu", "limits"})


class PlanQuery(PlanFields):
    """`mlrig plan MODEL --gpu G ...`: the flags of the command, one query parameter each."""

    model: Str = Field(description="catalog name or HF id of a catalog model (see /api/models)", min_length=1,
                       examples=["llama-3.1-8b"])


class PlanUploadQuery(PlanFields):
    """`mlrig plan FILE ...` for uploaded files: the flags; `model` optionally names the model."""

    model: Str | None = Field(None, description="a name for the uploaded model (default: from the file name)")


class CompareQuery(SetupQuery):
    """`mlrig compare MODEL --gpu A --gpu B --precision ...`: repeat gpu / precision / engine."""

    model: Str = Field(min_length=1, examples=["llama-3.1-8b"])
    gpu: NameList = Field(default_factory=list, max_length=64, description="GPUs to compare (repeat)",
                          examples=[["RTX 4090", "RTX 3090"]])
    precision: NameList = Field(default_factory=list, max_length=64, description="precisions (repeat)")
    engine: NameList = Field(default_factory=list, max_length=64, description="engines (repeat)")
    task: Literal["inference", "finetune", "pretrain"] | None = None
    kv_precision: Str | None = None
    batch: int | None = None
    prompt: int | None = None
    output: int | None = None
    context: int | None = None
    tp: int | None = None
    count: int | None = None
    load: Literal["static", "concurrency", "offline", "rate"] | None = Field(None, description="--load")
    request_rate: float | None = Field(None, description="--request-rate: requests/s, for load=rate")
    num_requests: int | None = Field(None, description="--num-requests of an offline / rate run")

    def common(self) -> dict[str, Any]:
        return self.model_dump(exclude={"model", "gpu", "precision", "engine"})


class ServeQuery(SetupQuery):
    """`mlrig serve MODEL ...`: the serving curve over concurrency."""

    model: Str = Field(min_length=1, examples=["llama-3.1-8b"])
    gpu: Str | None = Field(None, examples=["L40S"])
    count: int | None = None
    tp: int | None = None
    precision: Str | None = None
    kv_precision: Str | None = None
    engine: Str | None = Field(None, description="default vllm")
    prompt: int | None = Field(None, description="default 512, as plan (context alone: the context less the output)")
    output: int | None = Field(None, description="default 128, as plan")
    context: int | None = None
    min_tok_s: float = Field(20.0, description="per-user decode speed to hold, tok/s")
    max_ttft_ms: float | None = None
    concurrency: Str | None = Field(None, description="e.g. 1,2,4,8 (default: powers of 2 up to the KV capacity)")
    draft_model: Str | None = Field(None, description="draft model for speculative decoding (catalog)")
    spec_k: int = 4
    acceptance: float = 0.7


class RecommendQuery(SetupQuery):
    """`mlrig recommend --model M [workload flags] [constraints]`: one workload."""

    model: Str = Field(min_length=1, examples=["llama-3.1-8b"])
    task: Literal["inference", "finetune", "pretrain"] | None = None
    precision: Str | None = None
    engine: Str | None = None
    batch: int | None = None
    context: int | None = None
    method: Literal["full", "lora", "qlora"] | None = None
    seq_len: int | None = None
    optimizer: Str | None = None
    zero_stage: int | None = None
    offload: Literal["none", "optimizer", "params"] | None = None
    lora_rank: int | None = None
    min_tok_s: float | None = None
    min_throughput: float | None = None
    hours_per_day: float | None = None
    runs_per_week: float | None = None
    hours_per_run: float | None = None
    tokens_per_run: float | None = None
    reference_gpu: Str | None = None
    budget: float | None = Field(None, description="most you will pay up front, USD")
    local_only: bool = False
    cloud_only: bool = False
    max_power: float | None = None
    max_gpus: int | None = None
    no_used: bool = False
    years: float = 3.0
    objective: Literal["tco", "time", "usd-per-mtok"] = "tco"
    kwh_price: float | None = None
    allow_old: bool = Field(False, description="include Kepler/Maxwell/Pascal datacentre cards")
    any_vendor: bool = Field(False, description="include AMD/Intel GPUs for fine-tuning")
    gpu: NameList = Field(default_factory=list, max_length=64, description="only these GPUs (repeat)")
    have: NameList = Field(default_factory=list, max_length=16, description="cards you own (repeat)")
    have_pc: bool = Field(False, description="you own a PC that takes one GPU")
    pc_ram: float = Field(32.0, description="RAM of the PC you own, GiB")
    on_hours_per_month: float | None = None

    WORKLOAD_FLAGS: ClassVar[tuple[str, ...]] = (
        "task", "precision", "engine", "batch", "context", "method", "seq_len", "optimizer", "zero_stage",
        "offload", "lora_rank", "min_tok_s", "min_throughput", "hours_per_day", "runs_per_week",
        "hours_per_run", "tokens_per_run", "reference_gpu")

    def args(self) -> list[str]:
        """The workload as `mlrig recommend`'s extra arguments: --model M --precision q4_k_m ..."""
        out = ["--model", self.model]
        for name in self.WORKLOAD_FLAGS:
            v = getattr(self, name)
            if v is not None:
                out += ["--" + name.replace("_", "-"), str(v)]
        from mlrig.commands._common import SETUP_FIELD, setup_flag_table

        table = setup_flag_table()  # flag -> (section, plan field, converter or None for a switch, switch value)
        for name in SetupQuery.model_fields:
            v = getattr(self, name)
            if v is None:
                continue
            field = SETUP_FIELD.get(name, name)
            if isinstance(v, bool):  # the switch that sets the plan field to this value (eager = not cuda_graphs)
                want = not v if name == "eager" else v
                out += [f for f, (_, fld, conv, val) in table.items() if fld == field and conv is None and val == want]
            else:
                out += [next(f for f, (_, fld, _, _) in table.items() if fld == field), str(v)]
        return out

    def options(self) -> dict[str, Any]:
        """recommend_cmd's parameters (no plan files, no extra price files)."""
        return {"plan": None, "budget": self.budget, "local_only": self.local_only, "cloud_only": self.cloud_only,
                "max_power": self.max_power, "max_gpus": self.max_gpus, "no_used": self.no_used,
                "years": self.years, "objective": self.objective, "kwh_price": self.kwh_price,
                "allow_old": self.allow_old, "any_vendor": self.any_vendor, "gpu": self.gpu or None,
                "have": self.have or None, "have_pc": self.have_pc, "pc_ram": self.pc_ram,
                "on_hours_per_month": self.on_hours_per_month, "prices": None}


class CostQuery(_Query):
    """`mlrig cost --buy ... --hours-per-month ...`."""

    buy: Str | None = Field(None, description="price key (gpu.* or system.*) or a GPU name; default rtx-3090-used")
    count: int = 1
    price: float | None = None
    rent: NameList = Field(default_factory=list, max_length=64, description="cloud price keys (repeat)")
    spot: bool = False
    hours_per_month: float | None = None
    runs_per_week: float | None = None
    hours_per_run: float | None = None
    utilization: float = 0.8
    measured_w: float | None = None
    years: float = 3.0
    kwh_price: float | None = None
    pue: float | None = None
    tokens_per_s: float | None = None

    def kwargs(self) -> dict[str, Any]:
        d = self.model_dump()
        d["rent"] = d["rent"] or None
        return d


class FitQuery(SetupQuery):
    """`mlrig fit [MODEL] [--gpu G] ...`: every GPU, every precision, or every model."""

    model: Str | None = None
    gpu: Str | None = None
    task: Literal["inference", "finetune", "pretrain"] | None = None
    precision: Str | None = None
    engine: Str | None = None
    batch: int | None = None
    context: int | None = None
    method: Literal["full", "lora", "qlora"] | None = None
    count: int | None = None
    tp: int | None = None
    vendor: Str | None = None
    fits_only: bool = False


class GpusQuery(_Query):
    vendor: Str | None = None
    hw_class: Str | None = Field(None, description="geforce | workstation | datacenter | apple | amd | intel | other")
    min_memory: float | None = Field(None, description="GiB")
    search: Str | None = None


class ModelsQuery(_Query):
    search: Str | None = None
    family: Str | None = None
    max_params: float | None = Field(None, description="billions")


# ---- answers (for the schema; the API returns the CLI's dicts unchanged) ----------------------------

class Limits(BaseModel):
    max_batch_size: int | None
    max_context_tokens: int | None
    min_gpus: int | None


class PlanResponse(PlanResult):
    limits: Limits | None = None
    fixes: list[Fix] = Field(default_factory=list, description="single changes that make it fit (mlrig.fixes)")


class CompareRow(BaseModel):
    variant: str
    gpu: str | None
    precision: str | None
    engine: str | None
    result: PlanResult


class ServeResponse(BaseModel):
    model: str | None
    gpu: str | None
    gpu_count: int
    engine: str | None
    precision: str
    fits: bool
    context_tokens: int
    kv_cache_capacity_tokens: int | None
    kv_capacity_sequences: int | None
    kv_capacity_tokens_without_draft: int | None
    min_tok_s_per_user: float
    max_ttft_ms: float | None
    decode_error_band: float  # p90 band of the per-user speed at 1 user (the decode scope's)
    tpot_error_band: float = 0.0  # p90 band of TPOT under load; more users get the wider of the two
    curve: list[ServingPoint]
    max_concurrency: int
    binding_limit: str | None
    limits: ConcurrencyLimits | None
    speculative: dict[str, Any] | None


class CostResponse(TcoResult):
    usd_per_mtok: dict[str, float | None] | None = None


class FitRow(PlanResult):
    limits: Limits | None = None


class Timeline(BaseModel):
    """A `mlrig diagnose --out` timeline.csv, as columns of numbers (blank cells are None)."""

    columns: list[str]
    rows: int
    t_s: list[float]
    series: dict[str, list[float | None]]
    text: dict[str, list[str]] = Field(default_factory=dict)  # non-numeric columns (throttle reasons)


class DiagnoseUpload(BaseModel):
    timeline: Timeline | None = None
    report: DiagnoseReport | None = None


class ErrorResponse(BaseModel):
    error: str = Field(description="one line: the problem and the fix")
    field: str | None = Field(None, description="the input at fault, when one is")


RecommendResponse = Recommendation
