"""Run the real Hugging Face program on fake tensors and record its memory (torch imported here).

`run_trace(config_dict, recipe, layers)` builds the model class named in config.json with
`from_config` under `FakeTensorMode` (no weights, no remote code), applies the recipe (dtype,
PEFT LoRA, the QLoRA stand-in, gradient checkpointing, the optimizer), and runs training steps
(forward, backward, optimizer step, zero_grad) or a replay of `generate` (prefill, then a decode
step with a full KV cache), while `Tracker` logs every allocation. It returns each region's peak.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from mlrig.errors import MlrigError
from mlrig.trace.gpu_emulation import SdpaRouter, install_cuda_autocast_lists
from mlrig.trace.recipe import Recipe
from mlrig.trace.tracker import RegionPeak, Tracker, analyse

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# config keys that must not reach from_config: code from the repo, quantisation we model ourselves
_DROP_KEYS = ("auto_map", "quantization_config", "torch_dtype", "dtype", "transformers_version",
              "_name_or_path", "architectures_remote")


def layer_count(config: Any) -> int:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return int(getattr(text, "num_hidden_layers", 0) or 0)


def layer_pattern(config: Any) -> tuple[list[str], int]:
    """(per-layer kinds, leading layers that differ) of the decoder stack: attention type per layer
    (`layer_types`: sliding / full, ...) combined with dense-vs-MoE MLPs (`first_k_dense_replace`,
    `mlp_only_layers`, `decoder_sparse_step`)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = layer_count(config)
    kinds = [str(k) for k in (getattr(text, "layer_types", None) or [""] * n)][:n]
    kinds += [""] * (n - len(kinds))
    lead = int(getattr(text, "first_k_dense_replace", 0) or 0)
    dense = set(getattr(text, "mlp_only_layers", None) or [])
    step = getattr(text, "decoder_sparse_step", None)
    experts = max(int(getattr(text, k, 0) or 0) for k in ("num_experts", "n_routed_experts", "num_local_experts"))
    for i in range(n):
        moe = (experts > 0 and i >= lead and i not in dense
               and (not isinstance(step, int) or step <= 1 or (i + 1) % step == 0))
        kinds[i] += "/moe" if moe else "/dense"
    return kinds, min(lead, n)


def hf_config(cfg: dict[str, Any], layers: int | None = None) -> Any:
    """A transformers config object from a config.json dict; `layers` truncates the decoder stack
    (and every per-layer list in the config with it)."""
    from transformers import AutoConfig

    clean = {k: v for k, v in cfg.items() if not k.startswith("_") and k not in _DROP_KEYS}
    model_type = clean.pop("model_type", None)
    if not model_type:
        raise MlrigError("config.json has no model_type; trace needs a transformers architecture")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = AutoConfig.for_model(model_type, **clean)
    except (ValueError, KeyError) as exc:
        raise MlrigError(f"transformers has no architecture {model_type!r} ({exc}); trace runs only model "
                         "code shipped in transformers, never a repo's remote code") from None
    if layers is not None:
        _truncate(config, layers)
    return config


def _truncate(config: Any, layers: int) -> None:
    targets = [config]
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if text is not config:
        targets.append(text)
    for c in targets:
        n = getattr(c, "num_hidden_layers", None)
        if not n:
            continue
        for key, value in list(vars(c).items()):
            if isinstance(value, list) and len(value) == n and key != "architectures":
                setattr(c, key, value[:layers])
        if isinstance(getattr(c, "mlp_only_layers", None), list):
            c.mlp_only_layers = [i for i in c.mlp_only_layers if i < layers]
        c.num_hidden_layers = layers
        if hasattr(c, "num_decoder_layers") and getattr(c, "num_decoder_layers", None) == n:
            c.num_decoder_layers = layers


def _model_class(config: Any, cfg: dict[str, Any]) -> Any:
    import transformers

    for name in cfg.get("architectures") or []:
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM._model_mapping[type(config)]
    except KeyError:
        raise MlrigError(f"no transformers model class for {cfg.get('architectures') or type(config).__name__}; "
                         "trace runs only model code shipped in transformers") from None


def _ignore_causal_mask_sdpa(padding_mask: Any, q_length: int, kv_length: int, q_offset: Any, kv_offset: Any,
                             local_attention_size: int | None = None) -> bool:
    """transformers' `masking_utils._ignore_causal_mask_sdpa` as it decides on a GPU for the traced
    inputs (no padding: every token attends): skip the explicit mask (SDPA `is_causal=True`) unless a
    sliding window reaches into the sequence. The original reads tensor values, and says False for any
    FakeTensor ("tracing"), which would build an S x S mask that a real run does not have."""
    if local_attention_size is not None and kv_length >= local_attention_size:
        return False
    if q_length == 1 or kv_length == q_length:
        return True
    return isinstance(q_offset, int) and q_offset == 0


@contextlib.contextmanager
def _as_on_gpu() -> Iterator[None]:
    """Quiet transformers, and make its mask helpers decide as on a GPU for inputs without padding or
    packed sequences (their value checks cannot read fake tensors)."""
    import logging

    from transformers import masking_utils

    tlog = logging.getLogger("transformers")
    patches = {"_ignore_causal_mask_sdpa": _ignore_causal_mask_sdpa,
               "find_packed_sequence_indices": lambda position_ids: None}
    saved = {k: getattr(masking_utils, k) for k in patches if hasattr(masking_utils, k)}
    old = tlog.level
    tlog.setLevel(logging.ERROR)
    for k in saved:
        setattr(masking_utils, k, patches[k])
    swap = torch.utils.swap_tensors

    def swap_or_set(t1: torch.Tensor, t2: torch.Tensor) -> None:
        # `Module.to`/`_apply` swaps FakeTensor parameters, which fails while FakeTensorMode holds weak
        # references to them; `param.data =` gives the same storage change
        try:
            swap(t1, t2)
        except RuntimeError:
            t1.data = t2.data

    torch.utils.swap_tensors = swap_or_set
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            tlog.setLevel(old)
            torch.utils.swap_tensors = swap
            for k, v in saved.items():
                setattr(masking_utils, k, v)


# ---------------------------------------------------------------------------------------------
# QLoRA stand-in
# ---------------------------------------------------------------------------------------------

class _Dequant4bit(torch.autograd.Function):
    """bitsandbytes `MatMul4Bit`: dequantise the NF4 weight to the compute dtype, matmul, free it;
    save the input (and the packed weight, already resident); backward dequantises again for the
    input gradient (bitsandbytes/autograd/_functions.py)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, packed: torch.Tensor, out_features: int, in_features: int) -> torch.Tensor:
        w = torch.empty((out_features, in_features), dtype=x.dtype)
        y = torch.nn.functional.linear(x, w)
        del w
        ctx.save_for_backward(x)
        ctx.shape = (out_features, in_features)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        w = torch.empty(ctx.shape, dtype=grad.dtype)
        gx = grad @ w
        return gx, None, None, None


class FakeLinear4bit(torch.nn.Linear):
    """A bitsandbytes `Linear4bit` stand-in: NF4 weights with double quantisation, stored as uint8
    (2 values per byte) plus per-64-value absmax quantised to uint8 with an fp32 absmax per 256 of
    those (`bnb_4bit_use_double_quant=True`, QLoRA, Dettmers et al. 2023), computing in
    `compute_dtype`. Subclasses nn.Linear so that PEFT wraps it with its LoRA Linear."""

    def __init__(self, in_features: int, out_features: int, bias: bool, compute_dtype: torch.dtype) -> None:
        torch.nn.Module.__init__(self)
        self.in_features, self.out_features = in_features, out_features
        n = in_features * out_features
        self.weight = torch.nn.Parameter(torch.empty((n + 1) // 2, 1, dtype=torch.uint8), requires_grad=False)
        blocks = -(-n // 64)
        self.register_buffer("absmax", torch.empty(blocks, dtype=torch.uint8))
        self.register_buffer("absmax2", torch.empty(-(-blocks // 256), dtype=torch.float32))
        self.bias = (torch.nn.Parameter(torch.empty(out_features, dtype=compute_dtype))  # type: ignore[assignment]
                     if bias else None)
        self.compute_dtype = compute_dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(self.compute_dtype)  # bnb Linear4bit casts the input to compute_dtype
        y = _Dequant4bit.apply(x, self.weight, self.out_features, self.in_features)
        if self.bias is not None:
            y = y + self.bias
        return y.clone()  # PEFT's bnb LoRA Linear4bit clones the base output ("defensively")


def _quantise_linears(model: Any, compute_dtype: torch.dtype) -> int:
    """Replace every nn.Linear but the output head with the 4-bit stand-in (transformers'
    `replace_with_bnb_linear` skips the lm_head); returns how many."""
    head = model.get_output_embeddings()
    count = 0
    for _name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if type(child) is torch.nn.Linear and child is not head:
                setattr(module, child_name, FakeLinear4bit(child.in_features, child.out_features,
                                                           child.bias is not None, compute_dtype))
                count += 1
    return count


_TARGET_NAMES = {"q": ("q_proj", "query", "q", "q_b_proj"), "k": ("k_proj", "key", "k", "kv_a_proj_with_mqa"),
                 "v": ("v_proj", "value", "v", "kv_b_proj"),
                 "o": ("o_proj", "out_proj", "dense", "o"), "gate": ("gate_proj", "w1"), "up": ("up_proj", "w3"),
                 "down": ("down_proj", "w2")}


def _lora_targets(model: Any, targets: tuple[str, ...]) -> list[str]:
    """Module names for the plan's LoRA targets; PEFT's defaults for the model type when none match."""
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    found: list[str] = []
    for t in targets:
        key = t.lower().removesuffix("_proj")
        for cand in _TARGET_NAMES.get(key, (t,)):
            if cand in names:
                found.append(cand)
                break
    if found:
        return sorted(set(found))
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as defaults

    mt = model.config.model_type
    if mt in defaults:
        return list(defaults[mt])
    raise MlrigError(f"no LoRA target modules found for {mt} (targets {', '.join(targets)})")


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------

class TraceRun:
    """Raw output of one traced program at one layer count."""

    def __init__(self, layers: int, peaks: list[RegionPeak], reserved: int, params: int, trainable: int,
                 seconds: float, ops: int, kernels: list[str], notes: list[str]) -> None:
        self.layers, self.peaks, self.reserved = layers, peaks, reserved
        self.params, self.trainable, self.seconds, self.ops = params, trainable, seconds, ops
        self.kernels, self.notes = kernels, notes


def _hooks(model: Any, tr: Tracker, state: dict[str, Any]) -> list[Any]:
    """Region switches: the output head's forward (head), and in backward the gradient reaching the
    head's input (layers) and the embeddings' output (embeddings)."""
    handles = []
    head = model.get_output_embeddings()
    embed = model.get_input_embeddings()

    if head is not None:
        def head_pre(_m: Any, args: Any) -> None:
            if state["phase"] == "forward":
                tr.region(f"{state['tag']}:{state['fwd']}.head")
                x = args[0] if args else None
                if isinstance(x, torch.Tensor) and x.requires_grad:
                    tag = state["tag"]
                    x.register_hook(lambda g: tr.region(f"{tag}:backward.layers"))
        handles.append(head.register_forward_pre_hook(head_pre))
    if embed is not None:
        def embed_post(_m: Any, _args: Any, out: Any) -> None:
            if state["phase"] == "forward" and isinstance(out, torch.Tensor) and out.requires_grad:
                tag = state["tag"]
                out.register_hook(lambda g: tr.region(f"{tag}:backward.embed"))
        handles.append(embed.register_forward_hook(embed_post))
    return handles


def _optimizer(recipe: Recipe, params: list[torch.nn.Parameter]) -> Any:
    foreach = recipe.optimizer_impl == "foreach"
    fused = True if recipe.optimizer_impl == "fused" else None
    if recipe.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=1e-5, foreach=foreach, fused=fused)
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=foreach, fused=fused)
    from transformers.optimization import Adafactor

    return Adafactor(params, lr=1e-3, relative_step=False, scale_parameter=False)


def run_trace(cfg: dict[str, Any], recipe: Recipe, layers: int | None = None) -> TraceRun:
    """Trace `recipe` on the model of config.json `cfg`, with its decoder cut to `layers` if given."""
    install_cuda_autocast_lists()
    started = time.perf_counter()
    notes: list[str] = []
    config = hf_config(cfg, layers)
    cls = _model_class(config, cfg)
    dtype = _DTYPES[recipe.weights_dtype]
    attn = "eager" if recipe.attention == "eager" else "sdpa"
    fake = FakeTensorMode(allow_non_fake_inputs=False)
    tr = Tracker()
    router = SdpaRouter(recipe.attention)
    with _as_on_gpu(), fake, torch.device("cpu"):
        try:
            model = cls._from_config(config, dtype=dtype, attn_implementation=attn)
        except ValueError as exc:
            if attn != "sdpa" or "does not support an attention implementation" not in str(exc):
                raise MlrigError(f"transformers could not build {cls.__name__} from this config: {exc}") from None
            # no SDPA path (Gemma 2's logit softcapping, gpt-oss's sinks): transformers' eager attention
            model = cls._from_config(config, dtype=dtype, attn_implementation="eager")
            notes.append(f"{cls.__name__} has no SDPA attention in transformers: traced with its eager attention "
                         "(the S x S scores); a flash-attention-2 install would use less")
        except (ImportError, NotImplementedError) as exc:
            raise MlrigError(f"transformers could not build {cls.__name__} from this config: {exc}") from None
        if recipe.weights_dtype == "fp32" and any("moe" in k for k in layer_pattern(model.config)[0]) \
                and any(type(m).__name__.endswith("Experts") for m in model.modules()):
            raise MlrigError("transformers' MoE experts (grouped_mm) need 16-bit weights, so mixed precision with "
                             "fp32 master weights cannot run them; trace --optimizer adamw-bf16 (pure bf16) or LoRA")
        n_layers = layer_count(model.config)
        tr.region("setup")
        with tr:
            # the model as loaded and prepared: its build here (fake init of every weight, then
            # quantisation / LoRA wrapping) is not how from_pretrained fills a GPU, so it is not replayed
            tr.paused = True
            if recipe.task == "train":
                trainable = _prepare_training(model, recipe, tr, notes)
            else:
                model.eval()
                trainable = 0
            tr.paused = False
            for t in [*model.parameters(), *model.buffers()]:
                tr.see(t, "parameters")
            params = sum(p.numel() for p in model.parameters())
            state: dict[str, Any] = {"phase": "setup", "tag": "", "fwd": "forward"}
            hooks = _hooks(model, tr, state)
            try:
                with router:
                    if recipe.task == "train":
                        _train_steps(model, recipe, tr, state)
                    else:
                        _generate(model, recipe, tr, state, notes)
            except (RuntimeError, NotImplementedError, TypeError, ValueError) as exc:
                msg = str(exc).splitlines()[0][:300]
                if "data-dependent" in msg or "DynamicOutputShape" in type(exc).__name__ or "nonzero" in msg:
                    raise MlrigError(f"{cls.__name__} uses data-dependent shapes that fake tensors cannot follow "
                                     f"({msg})") from None
                raise MlrigError(f"tracing {cls.__name__} failed: {type(exc).__name__}: {msg}") from None
            finally:
                for h in hooks:
                    h.remove()
        peaks, alloc = analyse(tr)
        kernels = sorted(router.used)
        ops = tr.ops
        del model
    return TraceRun(layers=n_layers, peaks=peaks, reserved=alloc.stats.peak_reserved, params=params,
                    trainable=trainable, seconds=time.perf_counter() - started, ops=ops, kernels=kernels,
                    notes=notes)


def _move_adapter_in_place(self: Any, adapter_name: str, device: Any = None) -> None:
    """PEFT's `_move_adapter_to_device_of_base_layer` for fake tensors: the same dtype cast, done with
    `param.data =` (`Module.to` swaps FakeTensor parameters, which fails while FakeTensorMode holds
    weak references to them). One device here, so no move."""
    weight = getattr(self.get_base_layer(), "weight", None)
    dtype = weight.dtype if weight is not None and weight.dtype.is_floating_point else None
    if dtype is None:
        return
    for name in (*self.adapter_layer_names, *self.other_param_names):
        layer = getattr(self, name, None)
        if isinstance(layer, torch.nn.ModuleDict | torch.nn.ParameterDict) and adapter_name in layer:
            item = layer[adapter_name]
            for p in (item.parameters() if isinstance(item, torch.nn.Module) else [item]):
                if p.dtype.is_floating_point and p.dtype != dtype:
                    p.data = p.data.to(dtype)


def _prepare_training(model: Any, recipe: Recipe, tr: Tracker, notes: list[str]) -> int:
    model.train()
    if recipe.method == "qlora":
        compute = _DTYPES[recipe.autocast or recipe.weights_dtype]
        _quantise_linears(model, compute)
        model.is_loaded_in_4bit = True
        from peft import prepare_model_for_kbit_training

        # casts the remaining 16-bit weights (norms, embeddings, head) to fp32, freezes the base
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    if recipe.method in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model
        from peft.tuners.tuners_utils import BaseTunerLayer

        targets = _lora_targets(model, recipe.lora_targets)
        lcfg = LoraConfig(r=recipe.lora_rank, lora_alpha=2 * recipe.lora_rank, lora_dropout=0.0,
                          target_modules=targets, task_type=None)
        saved = BaseTunerLayer._move_adapter_to_device_of_base_layer
        BaseTunerLayer._move_adapter_to_device_of_base_layer = _move_adapter_in_place  # type: ignore[method-assign]
        try:
            peft_model = get_peft_model(model, lcfg)  # adapters end in fp32 (autocast_adapter_dtype=True)
        finally:
            BaseTunerLayer._move_adapter_to_device_of_base_layer = saved  # type: ignore[method-assign]
        model.__dict__["_mlrig_peft"] = peft_model
    if recipe.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if recipe.method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _train_steps(model: Any, recipe: Recipe, tr: Tracker, state: dict[str, Any]) -> None:
    params = [p for p in model.parameters() if p.requires_grad]
    opt = _optimizer(recipe, params)

    def grad_hook(q: torch.Tensor) -> None:  # whatever storage holds a .grad is a gradient
        if q.grad is not None:
            tr.see(q.grad, "gradients")
    for p in params:
        p.register_post_accumulate_grad_hook(grad_hook)
        tr.grad_sizes.add(p.numel() * p.element_size())
    in_bwd: dict[Any, Any] = {}
    if recipe.optimizer_in_backward:  # torchtune optimizer_in_bwd: one optimizer per parameter
        in_bwd = {p: _optimizer(recipe, [p]) for p in params}

        def step_hook(p: torch.Tensor) -> None:
            in_bwd[p].step()
            in_bwd[p].zero_grad(set_to_none=True)
        for p in params:
            p.register_post_accumulate_grad_hook(step_hook)
    b, s = recipe.batch_size, recipe.seq_len
    vocab = model.config.get_text_config().vocab_size
    amp = (torch.autocast("cpu", dtype=_DTYPES[recipe.autocast]) if recipe.autocast
           else contextlib.nullcontext())
    for step in range(1, recipe.steps + 1):
        tag = f"s{step}"
        state.update(phase="forward", tag=tag, fwd="forward")
        tr.region(f"{tag}:forward.body")
        ids = torch.randint(0, vocab, (b, s))
        labels = ids.clone()
        with amp:
            out = model(input_ids=ids, labels=labels, use_cache=False)
        loss = out.loss
        del out, ids, labels
        state["phase"] = "backward"
        tr.region(f"{tag}:backward.head")
        loss.backward()
        del loss
        state["phase"] = "optimizer"
        tr.region(f"{tag}:optimizer")
        if not in_bwd:
            opt.step()
        for o in (in_bwd.values() if in_bwd else [opt]):
            for st in o.state.values():
                for k, v in st.items():
                    # non-fused, non-capturable torch optimizers keep `step` on the host
                    host = k == "step" and recipe.optimizer_impl != "fused"
                    tr.label_all(v, "host" if host else "optimizer_state")
        tr.region(f"{tag}:zero_grad")
        opt.zero_grad(set_to_none=True)


def _label_cache(tr: Tracker, cache: Any) -> None:
    for layer in getattr(cache, "layers", []):
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                tr.see(t, "kv_cache")


def _generate(model: Any, recipe: Recipe, tr: Tracker, state: dict[str, Any], notes: list[str]) -> None:
    """HF `generate` (greedy, DynamicCache) replayed: `generate` refuses fake tensors, so its steps are
    run here as it runs them: a prefill with `logits_to_keep=1`, the last position's logits copied to
    fp32 and arg-maxed, then decode steps of one token. The decode step is traced with the cache
    already holding `context - 1` tokens (built untracked, then counted as KV cache), which is the
    largest decode step of the whole generation."""
    from transformers import DynamicCache

    b, p = recipe.batch_size, recipe.seq_len
    vocab = model.config.get_text_config().vocab_size
    kw: dict[str, Any] = {"use_cache": True}
    import inspect

    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        kw["logits_to_keep"] = 1
    with torch.no_grad():
        state.update(phase="forward", tag="p", fwd="prefill")
        tr.region("p:prefill.body")
        ids = torch.randint(0, vocab, (b, p))
        cache = DynamicCache(config=model.config)
        out = model(input_ids=ids, past_key_values=cache, **kw)
        _label_cache(tr, cache)
        tr.region("p:sample")
        scores = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
        nxt = scores.argmax(dim=-1, keepdim=True)
        del out, scores, nxt, cache
        # the cache at context - 1 tokens, built without recording, then registered as resident
        state["phase"] = "setup"
        tr.paused = True
        cache = DynamicCache(config=model.config)
        model(input_ids=torch.randint(0, vocab, (b, recipe.context - 1)), past_key_values=cache, **kw)
        tr.paused = False
        tr.region("d:decode.setup")
        for t in [*model.parameters(), *model.buffers()]:
            tr.see(t, "parameters")
        _label_cache(tr, cache)
        state.update(phase="forward", tag="d", fwd="decode")
        tr.region("d:decode.body")
        one = torch.randint(0, vocab, (b, 1))
        pos = torch.full((b, 1), recipe.context - 1, dtype=torch.long)
        out = model(input_ids=one, past_key_values=cache, position_ids=pos, **kw)
        _label_cache(tr, cache)
        tr.region("d:sample")
        scores = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
        nxt = scores.argmax(dim=-1, keepdim=True)
        del out, scores, nxt


__all__ = ["TraceRun", "hf_config", "layer_count", "run_trace"]
