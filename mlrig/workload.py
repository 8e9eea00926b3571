"""The workload description: a plan, as in docs/PLAN-FORMAT.md (TOML, JSON or flags).

A plan names a model (catalog id, HF id, file path, or explicit architecture), a workload
(inference / finetune / pretrain with precision, batch, context), optional training settings and
the hardware. Validation here rejects impossible numbers with one-line messages.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mlrig.catalog.gpus import GpuSpec

Task = Literal["inference", "finetune", "pretrain"]
_SIZE_CAP = 10_000_000  # hidden/intermediate sizes; the config.json reader uses the same caps
_LAYER_CAP = 10_000
_HEAD_CAP = 100_000
MAX_TOTAL_GPUS = 1_000_000
MAX_TOKENS_TO_TRAIN = 1e16  # 10,000T: ~300x the largest published training runs (Llama 4: 30T+)
Method = Literal["full", "lora", "qlora"]
Offload = Literal["none", "optimizer", "params"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("*", mode="before")
    @classmethod
    def _finite(cls, v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("must be a finite number (got NaN or infinity)")
        if isinstance(v, str) and not v.strip():  # --engine '' and friends: a name, never blank
            raise ValueError("must not be empty; give a name or leave the field out")
        return v


class ModelRef(_Strict):
    """`name` (catalog id, HF id or path) or an explicit architecture (fields of ModelArch)."""

    name: str | None = Field(None, min_length=1, max_length=1000)
    hidden_size: int | None = Field(None, gt=0, le=_SIZE_CAP)
    num_layers: int | None = Field(None, gt=0, le=_LAYER_CAP)
    num_heads: int | None = Field(None, gt=0, le=_HEAD_CAP)
    num_kv_heads: int | None = Field(None, gt=0, le=_HEAD_CAP)
    head_dim: int | None = Field(None, gt=0, le=_HEAD_CAP)
    intermediate_size: int | None = Field(None, gt=0, le=_SIZE_CAP)
    mlp: Literal["gated", "plain"] = "gated"
    vocab_size: int | None = Field(None, gt=0, le=100_000_000)
    tie_word_embeddings: bool = False
    num_experts: int = Field(0, ge=0, le=_HEAD_CAP)
    experts_per_token: int = Field(0, ge=0, le=_HEAD_CAP)
    params: float | None = Field(None, gt=0, le=1e15, description="stated total, checked against the derived count")

    @property
    def is_explicit(self) -> bool:
        return self.hidden_size is not None

    @model_validator(mode="after")
    def _need_something(self) -> ModelRef:
        if self.name is None and not self.is_explicit:
            raise ValueError("give model.name (catalog id, HF id or path) or an explicit architecture")
        if self.is_explicit:
            missing = [k for k in ("num_layers", "num_heads", "intermediate_size", "vocab_size")
                       if getattr(self, k) is None]
            if missing:
                raise ValueError(f"explicit architecture lacks {', '.join(missing)}")
        return self


class WorkloadSpec(_Strict):
    task: Task = "inference"
    precision: str = Field("bf16", max_length=200)
    kv_cache_precision: str | None = Field(None, max_length=200)  # default: compute dtype
    engine: str | None = Field(None, max_length=200)
    batch_size: int = Field(1, gt=0, le=1_000_000)
    prompt_tokens: int = Field(512, ge=0, le=100_000_000)
    output_tokens: int = Field(128, ge=0, le=100_000_000)
    context_tokens: int | None = Field(None, gt=0, le=100_000_000)
    gpu_memory_utilization: float | None = Field(None, ge=0.01, le=1.0)
    flash_attention: bool = True
    gpu_layers: int | None = Field(
        None, ge=0, le=100_000, description="llama.cpp -ngl: layers on the GPU(s); the rest run on the CPU")

    @property
    def context(self) -> int:
        return self.context_tokens or max(1, self.prompt_tokens + self.output_tokens)


class TrainingSpec(_Strict):
    method: Method = "full"
    lora_rank: int = Field(16, gt=0, le=65536)
    lora_targets: list[str] = Field(default_factory=lambda: ["q", "k", "v", "o", "gate", "up", "down"],
                                    max_length=100)
    optimizer: str = Field("adamw", max_length=200)
    seq_len: int | None = Field(None, gt=0, le=100_000_000)
    global_batch_tokens: int | None = Field(None, gt=0, le=10**12)
    gradient_checkpointing: bool = True
    zero_stage: int = Field(0, ge=0, le=3)
    offload: Offload = "none"
    tokens_to_train: float | None = Field(None, ge=1, le=MAX_TOKENS_TO_TRAIN)
    data_bytes_per_token: float | None = Field(
        None, ge=0.01, le=1e6,
        description="bytes of training data per token (default: pre-tokenised uint16/uint32 ids)")


class HardwareSpec(_Strict):
    gpu: str = Field("rtx-4090", max_length=200)
    count: int = Field(1, gt=0, le=100_000)
    nodes: int = Field(1, gt=0, le=100_000)
    tensor_parallel: int = Field(1, gt=0, le=1024)
    pipeline_parallel: int = Field(1, gt=0, le=1024)
    interconnect: str | None = Field(None, max_length=200)
    host_ram_gib: float | None = Field(None, ge=0.01, le=2**20)
    host_memory_bandwidth_gb_s: float | None = Field(
        None, ge=0.01, le=1e5, description="host RAM bandwidth for CPU-offloaded layers (measured by `mlrig probe`)")
    storage_gb_s: float | None = Field(
        None, ge=1e-4, le=1e6,
        description="sequential throughput of the storage holding data and checkpoints, 10^9 B/s")
    mtbf_hours: float | None = Field(
        None, ge=0.01, le=1e9, description="mean time between job interruptions (default: Llama 3's rate per GPU)")
    gpu_spec: GpuSpec | None = Field(
        None, description="an accelerator's figures (memory_gib, bandwidth_gb_s, bf16_tflops, ...): a device the "
        "catalog lacks, or replacements for the named gpu's figures (--gpu-spec)")

    @field_validator("gpu_spec", mode="before")
    @classmethod
    def _spec_text(cls, v: object) -> object:
        """`--gpu-spec memory_gib=32,bandwidth_gb_s=1792` arrives as text; tables pass through."""
        if isinstance(v, str):
            from mlrig.catalog.gpus import parse_gpu_spec
            from mlrig.errors import MlrigError

            try:
                return parse_gpu_spec(v)
            except MlrigError as exc:
                raise ValueError(str(exc)) from None
        return v

    @property
    def total_gpus(self) -> int:
        return self.count * self.nodes

    @property
    def data_parallel(self) -> int:
        return max(1, self.total_gpus // (self.tensor_parallel * self.pipeline_parallel))

    @model_validator(mode="after")
    def _parallel_fits(self) -> HardwareSpec:
        if self.total_gpus > MAX_TOTAL_GPUS:
            raise ValueError(f"count x nodes = {self.total_gpus:,} GPUs; the limit is {MAX_TOTAL_GPUS:,} "
                             "(the largest clusters hold a few hundred thousand)")
        if self.tensor_parallel * self.pipeline_parallel > self.total_gpus:
            raise ValueError(
                f"tensor_parallel x pipeline_parallel = {self.tensor_parallel * self.pipeline_parallel} "
                f"exceeds the {self.total_gpus} GPU(s) given; raise hardware.count or lower the parallelism")
        return self


class Plan(_Strict):
    """One workload on one hardware setup."""

    id: str | None = Field(None, max_length=1000)
    model: ModelRef
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    training: TrainingSpec | None = None
    hardware: HardwareSpec = Field(default_factory=HardwareSpec)

    @model_validator(mode="before")
    @classmethod
    def _model_shorthand(cls, data: object) -> object:
        """Accept `model = "llama-3.1-8b"` as shorthand for `[model] name = ...`."""
        if isinstance(data, dict) and isinstance(data.get("model"), str):
            data = {**data, "model": {"name": data["model"]}}
        return data

    @model_validator(mode="after")
    def _training_defaults(self) -> Plan:
        if self.workload.task != "inference" and self.training is None:
            self.training = TrainingSpec(method="full")
        return self
