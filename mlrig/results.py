"""Results, as in docs/PLAN-FORMAT.md. GiB = 2^30 bytes; a figure that does not apply is None."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, PrivateAttr


class MemoryBreakdown(BaseModel):
    per_gpu_gib: float
    weights_gib: float
    kv_cache_gib: float = 0.0
    activations_gib: float = 0.0
    gradients_gib: float = 0.0
    optimizer_gib: float = 0.0
    overhead_gib: float = 0.0
    host_ram_gib: float = 0.0
    gpu_capacity_gib: float
    headroom_gib: float = 0.0  # capacity - per_gpu (negative: does not fit)
    allocated_gib: float | None = None  # training: live tensors at the peak (torch max_memory_allocated)
    reserved_gib: float | None = None  # training: the caching allocator's reservation (max_memory_reserved)
    notes: list[str] = []  # assumptions and uncertainty, in words


class Performance(BaseModel):
    prefill_tok_s: float | None = None
    decode_tok_s: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    # serving loads: the mean TTFT where it differs from the median `ttft_ms` (a wave of more requests than
    # run at once: the first ones wait for no slot, the rest a request's duration; serving.wave_median_ttft_s)
    ttft_mean_ms: float | None = None
    throughput_tok_s: float | None = None  # output tokens/s, all sequences
    total_throughput_tok_s: float | None = None  # prompt + output tokens/s (serving loads)
    requests_per_s: float | None = None  # completed requests/s (serving loads)
    # rate loads: the most requests/s the setup completes (a full batch's); a rate at or above it is overloaded
    capacity_requests_per_s: float | None = None
    train_tokens_per_s: float | None = None
    step_time_s: float | None = None
    mfu: float | None = None  # model FLOPs utilisation, a fraction
    hfu: float | None = None  # hardware FLOPs utilisation: counts recomputed FLOPs too
    time_to_train_s: float | None = None
    bound: str | None = None  # memory-bandwidth | compute | interconnect | offload | host
    explanation: str | None = None  # one line: what the figure is made of
    error_band: dict[str, float] = {}  # metric -> relative p90 error from validation
    # inference: the request the speed figures are priced for: its prompt (prefill, TTFT), its output, and
    # the mean KV length each decode step reads (prompt + output / 2; decode_tok_s, TPOT); for a serving load
    # the running sequences' mean its iterations read (TPOT, throughput: serving.running_decode_context, longer
    # than prompt + output / 2 with varied lengths, where decode_tok_s, one sequence alone, stays there)
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    decode_context_tokens: int | None = None
    # `mlrig plan` only: other engines that run these weights here, {"vllm": {"decode_tok_s": ..,
    # "prefill_tok_s": ..}}, same plan otherwise (docs/PLAN-FORMAT.md)
    other_engines: dict[str, dict[str, float]] = {}
    # bands the estimate itself makes wider than its validation scope's p90 (a rate run near or past capacity:
    # serving.overload_ttft_band); planner.attach_validation keeps them. Not part of the output.
    _band_floor: dict[str, float] = PrivateAttr(default_factory=dict)

    @property
    def band_floor(self) -> dict[str, float]:
        return self._band_floor

    @band_floor.setter
    def band_floor(self, value: dict[str, float]) -> None:
        self._band_floor = value


class TrainingRun(BaseModel):
    """What a training run needs besides step time: data, checkpoints and failures (training tasks)."""

    # full | lora | qlora as evaluated: a fine-tune that names none takes its GPUs' (planner.default_finetune_method)
    method: str | None = None
    compute_optimal_tokens: float | None = None  # pre-training: ~20 tokens per parameter (Chinchilla)
    tokens_to_train: float | None = None
    data_bytes_per_token: float  # pre-tokenised ids (uint16 / uint32)
    data_read_mb_s: float  # MB = 10^6 bytes: what the input pipeline must sustain at this speed
    storage_gb_s: float  # assumed or given sequential throughput of the data / checkpoint storage
    data_pipeline_ok: bool
    checkpoint_gib: float  # a resumable checkpoint: trainable weights + optimizer states
    checkpoint_write_s: float
    mtbf_hours: float  # mean time between job interruptions on this many GPUs
    checkpoint_interval_s: float  # Young/Daly optimum
    checkpoint_overhead: float  # fraction of run time spent writing checkpoints and redoing lost work
    notes: list[str] = []


class FigureValidation(BaseModel):
    """How well one figure is validated (docs/PLAN-FORMAT.md): its scope's record over published runs,
    or not validated, with the nearest scope that is (mlrig/validation/scopes.py). Frozen: every plan in
    a scope shares its one object."""

    model_config = ConfigDict(frozen=True)

    validated: bool
    scope: str  # this plan's scope in words: "llama.cpp decode_tok_s, GDDR"
    rows: int = 0  # published runs in the scope
    median_error: float | None = None  # median |pred/meas - 1| over them, a fraction
    p90_error: float | None = None
    nearest: str | None = None  # not validated: the closest validated scope, in words
    nearest_p90_error: float | None = None


class PlanResult(BaseModel):
    id: str | None = None
    error: str | None = None
    fits: bool | None = None
    model: str | None = None
    gpu: str | None = None
    precision: str | None = None  # as evaluated (defaults filled in: see notes); QLoRA: the compute dtype
    # QLoRA: the frozen base's storage, nf4 or nf4-nodq (memory.qlora_base_precision); None otherwise
    base_weights_precision: str | None = None
    engine: str | None = None
    memory: MemoryBreakdown | None = None
    kv_cache_capacity_tokens: int | None = None  # with several replicas: one replica's pool
    # vLLM plans that give no max_model_len: vLLM's default --max-model-len is the model's maximum
    # (max_position_embeddings); when the KV pool holds fewer tokens, `vllm serve` with defaults refuses to
    # start, and this is the largest --max-model-len it starts with (the pool). None otherwise.
    max_model_len_limit_tokens: int | None = None
    # inference: copies of the model the GPUs run (count x nodes / (TP x PP)), each serving an even share of the
    # load (mlrig/estimators/replicas.py); throughput and requests/s are their sum, latency and memory one's
    data_parallel_replicas: int | None = None
    performance: Performance | None = None
    training: TrainingRun | None = None  # finetune / pretrain only
    validation: dict[str, FigureValidation] = {}  # figure name -> how well it is validated
    notes: list[str] = []
