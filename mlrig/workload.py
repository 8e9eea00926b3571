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
Load = Literal["static", "concurrency", "offline", "rate"]
Lengths = Literal["fixed", "varied", "uniform"]
Checkpointing = Literal["none", "selective", "full"]
AttentionKernel = Literal["flash_attention_2", "flash_attention_3", "cudnn"]
DEFAULT_PROMPT_TOKENS = 512
DEFAULT_OUTPUT_TOKENS = 128


def lengths_filling(context: int, output_tokens: int | None = None) -> tuple[int, int]:
    """(prompt, output) tokens of a request that fills a `context`-token sequence, for an inference plan
    that gives `context_tokens` and no `prompt_tokens`: the output given (else min(128, context / 4)) and
    the prompt the rest, so prompt + output = context. A user asking "how fast at 32k context" means a
    full context: memory is priced there, so the prefill (TTFT) and the decode's KV reads are too, as
    llama.cpp's llama-bench measures speed at a filled context with `-d/--n-depth` (ggml-org/llama.cpp
    PR #13096, 2025-04; PR #12874: "~4096 context is enough to get you good sensitivity to the slowdown
    of a filled context"). `mlrig sweep` fills its contexts the same way."""
    out = min(DEFAULT_OUTPUT_TOKENS, context // 4) if output_tokens is None else output_tokens
    return max(1, context - out), out


def _token_field(v: object, *, binary: bool = True) -> object:
    """A token count in a plan file or JSON as on the command line (docs/PLAN-FORMAT.md): `seq_len = "4k"` is
    4,096 as `--seq-len 4k` is (mlrig.units.parse_token_count); numbers pass through to the field's checks."""
    if isinstance(v, str):
        from mlrig.errors import MlrigError
        from mlrig.units import parse_token_count

        try:
            return parse_token_count(v, binary=binary)
        except MlrigError:
            raise ValueError(f"cannot read {v!r} as a token count; give an integer or a short form such as "
                             "8k, 32k, 128k, 1M") from None
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("*", mode="before")
    @classmethod
    def _finite(cls, v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("must be a finite number, not NaN or infinity")
        if isinstance(v, str) and not v.strip():  # --engine '' and friends: a name, never blank
            raise ValueError("must not be empty; give a name or leave the field out")
        return v

    @field_validator("task", "method", "load", "lengths", "offload", "activation_checkpointing", mode="before",
                     check_fields=False)
    @classmethod
    def _lower_case(cls, v: object) -> object:
        """Keyword fields in any case, as people write them ('QLoRA', 'LoRA', 'Finetune')."""
        return v.strip().lower() if isinstance(v, str) else v


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
    prompt_tokens: int = Field(
        DEFAULT_PROMPT_TOKENS, ge=0, le=100_000_000, description="prompt tokens per request (default 512; with "
        "context_tokens given for inference: the context less the output, `lengths_filling`)")
    output_tokens: int = Field(
        DEFAULT_OUTPUT_TOKENS, ge=0, le=100_000_000, description="output tokens per request (default 128; with "
        "only context_tokens given: min(128, context / 4))")
    context_tokens: int | None = Field(None, gt=0, le=100_000_000)
    gpu_memory_utilization: float | None = Field(None, ge=0.01, le=1.0)
    flash_attention: bool = True
    gpu_layers: int | None = Field(
        None, ge=0, le=100_000, description="llama.cpp -ngl: layers on the GPU(s); the rest run on the CPU")
    # Serving loads and engine caps (docs/PLAN-FORMAT.md "Keys published runs need").
    load: Load = Field(
        "static", description="static: one batch of batch_size sequences; concurrency: batch_size users in a "
        "closed loop; offline: num_requests all at once; rate: Poisson arrivals at request_rate req/s")
    request_rate: float | None = Field(None, gt=0, le=1e6, description="requests/s, for load = 'rate'")
    num_requests: int | None = Field(None, gt=0, le=1_000_000_000, description="requests of an offline / rate run")
    lengths: Lengths = Field(
        "fixed", description="fixed: every request has prompt_tokens in and output_tokens out (vllm bench serve's "
        "default random dataset, a max_tokens cap every greedy output hits), so a closed loop's users finish "
        "together and every round is a wave; varied: lengths vary (ShareGPT, sampled outputs that stop at EOS), "
        "so only the opening round of users / num_requests is, and an offline run ends in a drain of its longest "
        "requests; uniform: each request's lengths drawn uniformly around the plan's means (a benchmark client's "
        "random dataset with a range ratio: `range_ratio`), varied like that but without the exponential tail")
    range_ratio: float | None = Field(
        None, gt=0.0, le=1.0, description="with lengths = 'uniform': each request's prompt and output lengths are "
        "uniform in [L (1 - r), L (1 + r)] around the plan's means L (vllm bench serve's --random-range-ratio r); "
        "a client drawing [L' r', L'] (SGLang's bench_serving, the early vLLM benchmark_serving.py) "
        "is r = (1 - r') / (1 + r') with means L' (1 + r') / 2; default 1: uniform in [0, 2 L], SGLang's default "
        "range ratio 0")
    max_output_tokens: int | None = Field(
        None, gt=0, le=100_000_000, description="the client's max_tokens cap on each request's output, for "
        "varied lengths (AccelMark's ShareGPT suite: 512): no request decodes past it, so an offline run's drain "
        "of its longest requests ends there; none: uncapped")
    cached_prompt_tokens: int = Field(
        0, ge=0, le=100_000_000, description="prompt tokens per request served from the engine's prefix cache "
        "(vLLM --enable-prefix-caching, SGLang's radix cache): their prefill is skipped, their KV still read")
    max_num_seqs: int | None = Field(
        None, gt=0, le=1_000_000, description="engine's batch cap (vLLM --max-num-seqs, TRT-LLM max_batch_size)")
    max_num_batched_tokens: int | None = Field(
        None, gt=0, le=100_000_000, description="engine's tokens per step (vLLM --max-num-batched-tokens)")
    max_model_len: int | None = Field(
        None, gt=0, le=100_000_000, description="engine's context cap (vLLM --max-model-len)")
    enable_chunked_prefill: bool | None = Field(
        None, description="vLLM --enable-chunked-prefill / --no-enable-chunked-prefill; None: the engine's default "
        "(V1 always chunks; V0 from 0.5.3 chunks when max_model_len > 32,768: 512 tokens per step to 0.6.4, "
        "2,048 after)")
    engine_version: str | None = Field(
        None, min_length=1, max_length=120, description="engine release or build: '0.6.4', 'b3000', '4.38', '2024-06'")
    num_scheduler_steps: int | None = Field(
        None, gt=0, le=1024, description="vLLM --num-scheduler-steps (multi-step scheduling, releases 0.6.0 to "
        "0.10.0): one scheduling and input preparation per this many decode steps")
    allow_long_context: bool = Field(
        False, description="accept a context above the model's maximum (rope scaling), with a warning")
    cuda_graphs: bool = Field(
        True, description="false: the engine runs without CUDA / HIP graphs (vLLM --enforce-eager, SGLang "
        "--disable-cuda-graph, llama.cpp GGML_CUDA_DISABLE_GRAPHS=1), so each decode step launches every kernel "
        "from the host; true (default): the engine's own default (graphs where it captures them)")

    @field_validator("prompt_tokens", "output_tokens", "context_tokens", "max_output_tokens", "cached_prompt_tokens",
                     "max_num_batched_tokens", "max_model_len", mode="before")
    @classmethod
    def _token_counts(cls, v: object) -> object:
        return _token_field(v)

    @model_validator(mode="after")
    def _load_needs(self) -> WorkloadSpec:
        if self.follows_context:
            assert self.context_tokens is not None
            given = self.output_tokens if "output_tokens" in self.model_fields_set else None
            # set in __dict__: the lengths stay "not given", so a copy with another context (a fix, a
            # variant) fills that context anew
            self.__dict__["prompt_tokens"], self.__dict__["output_tokens"] = lengths_filling(self.context_tokens, given)
        self._request_fits_context()
        if self.load == "rate" and self.request_rate is None:
            raise ValueError("load = 'rate' needs workload.request_rate (requests/s)")
        if self.request_rate is not None and self.load != "rate":
            raise ValueError(f"workload.request_rate applies to load = 'rate' (got load = {self.load!r})")
        if self.range_ratio is not None and self.lengths != "uniform":
            raise ValueError(f"workload.range_ratio applies to lengths = 'uniform' (got lengths = {self.lengths!r}); "
                             "give --lengths uniform or leave the range ratio out")
        if self.max_output_tokens is not None and self.lengths == "uniform":
            raise ValueError("workload.max_output_tokens applies to lengths = 'varied'; uniform lengths end at "
                             "L (1 + range_ratio): leave the cap out")
        if self.cached_prompt_tokens >= max(1, self.prompt_tokens):
            raise ValueError("workload.cached_prompt_tokens must be below prompt_tokens (the last prompt token is "
                             "always computed)")
        return self

    def _request_fits_context(self) -> None:
        """An inference request longer than the context it is given (`--context 8k --prompt 16k`) is refused:
        memory would be sized at the context and speed priced at the prompt, two different requests. The
        engines refuse it too (vLLM: "The decoder prompt (length N) is longer than the maximum model length";
        llama.cpp's server stops a request at its n_ctx)."""
        if self.task != "inference" or self.context_tokens is None:
            return
        need = self.prompt_tokens + self.output_tokens
        if need <= self.context_tokens:
            return
        given = self.model_fields_set
        if "output_tokens" not in given and self.prompt_tokens < self.context_tokens:
            # only the default output overflows (--context 8k --prompt 8000): it shrinks to what the context
            # leaves, kept "not given" (set in __dict__) like the lengths a context fills
            self.__dict__["output_tokens"] = self.context_tokens - self.prompt_tokens
            return
        defaulted = [name for name in ("prompt_tokens", "output_tokens") if name not in given]
        note = f" ({' and '.join(defaulted)} the default)" if defaulted else ""
        raise ValueError(
            f"the request is longer than its context: prompt_tokens {self.prompt_tokens:,} + output_tokens "
            f"{self.output_tokens:,} = {need:,} exceed context_tokens {self.context_tokens:,}{note}; give a context "
            f"of at least {need:,} (--context {need}), or a shorter prompt (--prompt) or output (--output)")

    @property
    def context(self) -> int:
        return self.context_tokens or max(1, self.prompt_tokens + self.output_tokens)

    @property
    def length_spread(self) -> float:
        """Half-width of the uniform lengths relative to their mean (`lengths = "uniform"`: `range_ratio`,
        default 1, so lengths in [0, 2 L]); 0 for other lengths."""
        if self.lengths != "uniform":
            return 0.0
        return 1.0 if self.range_ratio is None else self.range_ratio

    @property
    def mean_decode_context(self) -> int:
        """Tokens of context a decode step reads on average over a request: the prompt and half the output
        (the KV grows by one token per step), at least one. The decode figures are priced there."""
        return max(1, self.prompt_tokens + self.output_tokens // 2)

    @property
    def follows_context(self) -> bool:
        """An inference plan whose prompt (and output) were not given but its context was: its request
        fills the context (`lengths_filling`), at any context it is asked about."""
        fields = self.model_fields_set
        return (self.task == "inference" and self.context_tokens is not None and "prompt_tokens" not in fields
                and ("output_tokens" not in fields or self.output_tokens < self.context_tokens))

    def prompt_at(self, context: int) -> int:
        """The prompt of this workload's request in a `context`-token sequence (`memory.max_context_tokens`
        asks at many): the one filling it when the plan follows its context, else the prompt given, cut to it."""
        if self.follows_context:
            return lengths_filling(context, self.output_tokens if "output_tokens" in self.model_fields_set else None)[0]
        return min(self.prompt_tokens, context)


def request_lengths(workload: object) -> tuple[int, int]:
    """(prompt, output) tokens of a plan's `workload` section (a dict) as the planner reads it, filled from
    its context when only that is given (`lengths_filling`); the defaults when it does not validate."""
    from pydantic import ValidationError

    try:
        w = WorkloadSpec.model_validate(workload if isinstance(workload, dict) else {})
    except ValidationError:
        return DEFAULT_PROMPT_TOKENS, DEFAULT_OUTPUT_TOKENS
    return w.prompt_tokens, w.output_tokens


class TrainingSpec(_Strict):
    method: Method = "full"
    lora_rank: int = Field(16, gt=0, le=65536)
    lora_targets: list[str] = Field(
        default_factory=lambda: ["q", "k", "v", "o", "gate", "up", "down"], max_length=100,
        description="q,k,v,o,gate,up,down; 'attention' = q,k,v,o, 'mlp' = gate,up,down; 'embeddings' and "
        "'lm_head' train those matrices fully (PEFT modules_to_save)")
    optimizer: str = Field("adamw", max_length=200)
    seq_len: int | None = Field(None, gt=0, le=100_000_000)
    global_batch_tokens: int | None = Field(None, gt=0, le=10**12)
    gradient_checkpointing: bool = True
    activation_checkpointing: Checkpointing | None = Field(
        None, description="none | selective | full (default: full when gradient_checkpointing, else none)")
    zero_stage: int = Field(0, ge=0, le=3)
    offload: Offload = "none"
    chunked_loss: bool | None = Field(
        None, description="loss computed in chunks: no full fp32 logits (default: true for engine torchtune, "
        "whose recipes use CEWithChunkedOutputLoss, else false)")
    activation_offload: bool = Field(False, description="saved activations offloaded to host RAM")
    attention_kernel: AttentionKernel | None = Field(
        None, description="the flash-attention kernel the framework runs: flash_attention_2 | flash_attention_3 | "
        "cudnn (transformers / prime-rl `attn_implementation` names; cudnn = Transformer Engine's fused attention); "
        "default: the engine's (cudnn for NeMo / Megatron / Surogate on NVIDIA Hopper and newer, else "
        "flash_attention_2)")
    fp8_dot_product_attention: bool = Field(
        False, description="attention's two GEMMs (QK^T, AV) in FP8 as well: Transformer Engine's FP8 "
        "DotProductAttention (NeMo / Megatron-Core fp8_dot_product_attention, --fp8-dot-product-attention; MLPerf "
        "FP8_DPA=1), cuDNN's FP8 fused attention on NVIDIA Hopper and newer; elsewhere no effect and a note")
    enable_cuda_graph: bool | None = Field(
        None, description="each micro-batch's forward and backward replayed from CUDA graphs (Megatron-Core / NeMo "
        "cuda_graph_impl / enable_cuda_graph, Transformer Engine make_graphed_callables; MLPerf '_cg' configs): no "
        "host launch cost per micro-batch; default: the engine's (on for Surogate and llm.q, off otherwise)")
    context_parallel: int = Field(1, gt=0, le=1024, description="sequence split across GPUs (ring attention / CP)")
    virtual_pipeline_stages: int = Field(
        1, gt=0, le=1024, description="interleaved 1F1B: model chunks per pipeline rank (Megatron-Core "
        "--virtual-pipeline-model-parallel-size); 1 = plain 1F1B")
    expert_parallel: int = Field(1, gt=0, le=4096, description="MoE experts split across GPUs")
    expert_tensor_parallel: int | None = Field(
        None, gt=0, le=1024,
        description="each routed expert split across this many GPUs (Megatron-Core "
        "--expert-tensor-parallel-size; default: tensor_parallel, as Megatron-Core's)")
    sequence_parallel: bool = Field(False, description="Megatron SP (with TP): activations sharded by TP")
    tp_comm_overlap: bool = Field(
        False, description="Megatron-Core / NeMo tp_comm_overlap (Transformer Engine userbuffers; needs "
        "sequence_parallel): the TP all-gathers / reduce-scatters run in chunks under the GEMMs; 40 % of their "
        "transfer time hidden (fitted on MLPerf Llama-2-70B LoRA runs with and without it)")
    tokens_to_train: float | None = Field(None, ge=1, le=MAX_TOKENS_TO_TRAIN)
    data_bytes_per_token: float | None = Field(
        None, ge=0.01, le=1e6,
        description="bytes of training data per token (default: pre-tokenised uint16/uint32 ids)")

    @field_validator("seq_len", "global_batch_tokens", mode="before")
    @classmethod
    def _token_counts(cls, v: object) -> object:
        return _token_field(v)

    @field_validator("tokens_to_train", mode="before")
    @classmethod
    def _total_tokens(cls, v: object) -> object:
        """Totals as papers and `--tokens` write them: "100B" is 1e11, "15T" 1.5e13 (k = 1000)."""
        return _token_field(v, binary=False)

    @model_validator(mode="after")
    def _checkpointing(self) -> TrainingSpec:
        """`activation_checkpointing` wins; `gradient_checkpointing = true` alone means "full"
        (`checkpointing` reads the two as one)."""
        if self.activation_checkpointing is None:
            return self
        if "gradient_checkpointing" in self.model_fields_set and (
                self.gradient_checkpointing != (self.activation_checkpointing != "none")):
            raise ValueError(f"gradient_checkpointing={str(self.gradient_checkpointing).lower()} contradicts "
                             f"activation_checkpointing={self.activation_checkpointing!r}; give one of them")
        self.gradient_checkpointing = self.activation_checkpointing != "none"
        return self

    @property
    def checkpointing(self) -> Checkpointing:
        """none | selective | full, from either key."""
        return self.activation_checkpointing or ("full" if self.gradient_checkpointing else "none")


class HardwareSpec(_Strict):
    gpu: str = Field("rtx-4090", max_length=200)
    count: int = Field(1, gt=0, le=100_000)
    nodes: int = Field(1, gt=0, le=100_000)
    tensor_parallel: int = Field(1, gt=0, le=1024)
    pipeline_parallel: int = Field(1, gt=0, le=1024)
    expert_parallel: int = Field(
        1, gt=0, le=4096, description="inference: MoE experts split whole across this many GPUs (vLLM "
        "--enable-expert-parallel: EP = TP x DP; SGLang --ep-size); training plans give training.expert_parallel")
    interconnect: str | None = Field(None, max_length=200)
    host_ram_gib: float | None = Field(None, ge=0.01, le=2**20)
    host_memory_bandwidth_gb_s: float | None = Field(
        None, ge=0.01, le=1e5, description="host RAM bandwidth for CPU-offloaded layers (measured by `mlrig probe`)")
    storage_gb_s: float | None = Field(
        None, ge=1e-4, le=1e6,
        description="sequential throughput of the storage holding data and checkpoints, 10^9 B/s")
    mtbf_hours: float | None = Field(
        None, ge=0.01, le=1e9, description="mean time between job interruptions (default: Meta's RSC-1/RSC-2 "
        "failure rate per GPU, arXiv 2410.21680)")
    power_limit_w: float | None = Field(
        None, gt=0, le=10_000, description="a GPU power cap below TDP (nvidia-smi -pl); scales the compute peak")
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
                f"exceeds the {self.total_gpus} GPU(s) given; raise hardware.count (-n) or lower the parallelism "
                "(--tp, --pp)")
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

    @property
    def expert_tensor_parallel_size(self) -> int:
        """GPUs each routed expert is split across in training: `training.expert_tensor_parallel`, else the
        tensor-parallel size (Megatron-Core, megatron/training/arguments.py: `--expert-tensor-parallel-size`
        defaults to `--tensor-model-parallel-size`)."""
        given = self.training.expert_tensor_parallel if self.training is not None else None
        return given or self.hardware.tensor_parallel

    @model_validator(mode="after")
    def _training_defaults(self) -> Plan:
        self._expert_parallel_home()
        self._no_training_keys_for_inference()
        self._no_gguf_training()
        if self.workload.task != "inference" and self.training is None:
            self.training = TrainingSpec()
        t, hw = self.training, self.hardware
        shard_by_default(self)
        if t is not None and self.workload.task != "inference":
            model_par = hw.tensor_parallel * hw.pipeline_parallel * t.context_parallel
            if model_par > hw.total_gpus:
                raise ValueError(f"tensor x pipeline x context parallel = {model_par} exceeds the {hw.total_gpus} "
                                 "GPU(s) given; raise hardware.count (-n) or lower the parallelism (--tp, --pp)")
            # Megatron-Core's "MoE parallel folding" (parallel_state.initialize_model_parallel): the expert
            # layers re-fold a pipeline stage's tensor x context x data ranks into expert-tensor x expert x
            # expert-data ranks, so expert_tensor_parallel x expert_parallel must divide them
            stage = hw.total_gpus // hw.pipeline_parallel
            etp = self.expert_tensor_parallel_size
            if stage % (etp * t.expert_parallel):
                raise ValueError(f"expert_tensor_parallel {etp} x expert_parallel {t.expert_parallel} must divide "
                                 f"the {stage} GPU(s) of a pipeline stage (tensor x context x data parallel); "
                                 "lower expert_parallel, or give expert_tensor_parallel = 1")
        ep = hw.expert_parallel
        if self.workload.task == "inference" and ep > 1:
            stage = hw.total_gpus // hw.pipeline_parallel  # the GPUs of one pipeline stage
            tp = hw.tensor_parallel
            if ep > stage or stage % ep or (tp % ep if ep <= tp else ep % tp):
                raise ValueError(f"expert_parallel {ep} must divide the {stage} GPU(s) of a pipeline stage and "
                                 f"divide, or be a multiple of, tensor_parallel {tp} (vLLM: EP = TP x DP)")
        return self

    def _no_gguf_training(self) -> None:
        """A GGUF block format (q4_k_m, q8_0, ...) with a training task: llama.cpp's formats are for inference,
        and no trainer loads them (QLoRA quantises the HF checkpoint to bitsandbytes NF4 as it loads:
        `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")`, HF PEFT / bitsandbytes docs), so
        the plan is an error naming the precision to give instead, not a figure for a run that cannot happen."""
        if self.workload.task == "inference":
            return
        from mlrig.errors import MlrigError
        from mlrig.quant import parse_precision

        try:
            gguf = parse_precision(self.workload.precision).llama_cpp_only
        except MlrigError:
            return  # an unknown precision is reported where it is used, with its own message
        if gguf:
            method = self.training.method if self.training is not None else "full"
            fix = ("--precision bf16 (QLoRA loads the base as bitsandbytes NF4 itself; or nf4)" if method == "qlora"
                   else "--precision bf16 (or --method qlora for a 4-bit base)")
            raise ValueError(f"precision {self.workload.precision!r} is a GGUF (llama.cpp) format, which no trainer "
                             f"loads; for {method} training give {fix}")

    def _no_training_keys_for_inference(self) -> None:
        """Training settings on an inference plan (`--task inference --method lora`, or `--seq-len 4k` where
        `--context` was meant) would be dropped without a word: they are an error naming both ways out.
        `expert_parallel` is exempt: `--ep` lands in [training] and moves to [hardware] for inference. Keys at
        their default are let through: a dumped inference plan that went through that move carries them all."""
        t = self.training
        if self.workload.task != "inference" or t is None:
            return
        default = TrainingSpec()
        given = sorted(k for k in t.model_fields_set - {"expert_parallel"} if getattr(t, k) != getattr(default, k))
        if given:
            keys = ", ".join(f"training.{k}" for k in given)
            them = "it" if len(given) == 1 else "them"
            raise ValueError(f"{keys} given for an inference plan: set workload.task = 'finetune' or 'pretrain' "
                             f"(--task finetune), or drop {them} (for inference, --context sets the tokens per "
                             "sequence)")

    def _expert_parallel_home(self) -> None:
        """`expert_parallel` lives in [training] for training plans and in [hardware] for inference (beside
        tensor_parallel, as serving engines take it: vLLM --enable-expert-parallel, SGLang --ep-size); given in
        the other section (`--ep` lands in [training]) it moves to its home, and two different values are an error."""
        t, hw = self.training, self.hardware
        inference = self.workload.task == "inference"
        src, dst = (t, hw) if inference else (hw, t)
        if src is None or "expert_parallel" not in src.model_fields_set or src.expert_parallel == 1:
            return
        if dst is not None and "expert_parallel" in dst.model_fields_set and dst.expert_parallel != src.expert_parallel:
            raise ValueError(f"training.expert_parallel {t.expert_parallel if t else 1} and hardware.expert_parallel "
                             f"{hw.expert_parallel} differ; give one ({'hardware' if inference else 'training'}"
                             f".expert_parallel for {'inference' if inference else 'training'})")
        if inference:  # moved, not copied: a dump of this plan validates again to the same plan
            self.hardware = hw.model_copy(update={"expert_parallel": src.expert_parallel})
            assert t is not None  # the source
            self.training = t.model_copy(update={"expert_parallel": 1})
        else:
            home = t or TrainingSpec()
            self.training = home.model_copy(update={"expert_parallel": src.expert_parallel})
            self.hardware = hw.model_copy(update={"expert_parallel": 1})


ZERO_DEFAULT_NOTE = "no ZeRO stage given: ZeRO 3 / FSDP full shard assumed"  # planner.with_defaults' note

# Training engines whose multi-GPU layout is their own (Megatron-style TP/PP with a distributed optimizer): their
# plans keep ZeRO 0 unless it is given.
OWN_SHARDING_ENGINES = ("nemo", "megatron", "internevo", "surogate", "llmq", "hai-llm", "meta-internal", "olmo-core")


def sharded_by_default(plan: Plan) -> bool:
    """A full fine-tune on several GPUs with no ZeRO stage, tensor or pipeline parallelism given: what its users
    run is fully sharded data parallelism, so ZeRO 3 / FSDP full shard is the default (plain DDP keeps every
    state on every GPU, ~16 B per parameter: a 7B does not fit an 80 GB card). The multi-GPU full fine-tuning
    recipes do so: torchtune's `full_finetune_distributed` wraps the model in FSDP (full shard), LLaMA-Factory's
    full-parameter examples (examples/train_full/*.yaml) use `deepspeed: examples/deepspeed/ds_z3_config.json`,
    axolotl's multi-GPU guide offers DeepSpeed ZeRO-1/2/3 and FSDP. Pre-training and LoRA keep ZeRO 0 (DDP)."""
    t, hw, w = plan.training, plan.hardware, plan.workload
    return (t is not None and "zero_stage" not in t.model_fields_set and t.zero_stage == 0
            and hw.tensor_parallel == 1 and hw.pipeline_parallel == 1 and t.context_parallel == 1
            and full_shard_default(w.task, t.method, hw.total_gpus, w.engine))


def full_shard_default(task: str, method: str, gpus: int, engine: str | None) -> bool:
    """The part of `sharded_by_default` that needs no parsed plan (the advisor's recipes read it from a plan
    dict): a full fine-tune on several GPUs, by an engine that does not lay the GPUs out itself."""
    return (task == "finetune" and method == "full" and gpus > 1
            and not (engine or "").lower().startswith(OWN_SHARDING_ENGINES))


def shard_by_default(plan: Plan) -> None:
    """ZeRO 3 for a plan `sharded_by_default` picks (Plan's validator; grid.parse_member, which skips it), left
    out of the training's fields set: still a default, which planner.with_defaults notes."""
    if sharded_by_default(plan):
        assert plan.training is not None
        plan.training.zero_stage = 3
        plan.training.model_fields_set.discard("zero_stage")
