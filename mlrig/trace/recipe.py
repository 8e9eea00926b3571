"""What program a trace runs: the recipe, derived from a plan (no torch here).

A plan says "full fine-tune of Llama-3.1-8B in bf16 with AdamW"; the memory depends on which program
does it. The recipe names every choice the trace makes, so the output can say what it assumed:

- weights: `fp32` (fp32 training, or mixed precision with fp32 master weights and autocast, which is
  what the plan's `adamw` + bf16 means: the 16 B/param of Rajbhandari et al. 2020), or `bf16`/`fp16`
  ("pure" 16-bit training as torchtune does it, chosen with an optimizer named `adamw-bf16`);
- autocast: the compute dtype of CUDA autocast (HF Trainer `bf16=True`, accelerate), or none;
- optimizer and its implementation (`foreach`, `fused`, `forloop`; HF Trainer's default since
  transformers 4.5x with torch >= 2.8 is `adamw_torch_fused`; plain `torch.optim.AdamW` on CUDA
  defaults to foreach);
- attention kernel: SDPA flash (the CUDA default for fp16/bf16 without a mask), memory-efficient
  (when a mask is needed), or eager (unfused: the full score matrix);
- gradient checkpointing (non-reentrant `torch.utils.checkpoint`, transformers' default);
- LoRA / QLoRA: PEFT with fp32 adapters (PEFT `autocast_adapter_dtype=True`); QLoRA stores the base
  weights as 4-bit NF4 (bitsandbytes layout) and dequantises per matmul.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from mlrig.errors import MlrigError
from mlrig.workload import Plan

OptimizerImpl = Literal["foreach", "fused", "forloop"]
Attention = Literal["flash", "efficient", "eager"]

# Bump when the trace code changes what it measures, so cached results are recomputed.
TRACE_VERSION = 1


class Recipe(BaseModel):
    """Every choice the traced program makes (part of the cache key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Literal["train", "inference"]
    method: Literal["full", "lora", "qlora"] = "full"
    weights_dtype: Literal["fp32", "bf16", "fp16"] = "bf16"
    autocast: Literal["bf16", "fp16"] | None = None
    optimizer: Literal["adamw", "sgd", "adafactor"] = "adamw"
    optimizer_impl: OptimizerImpl = "fused"
    optimizer_in_backward: bool = False
    attention: Attention = "flash"
    gradient_checkpointing: bool = False
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = ()
    batch_size: int = 1
    seq_len: int = 512  # training sequence / inference prompt
    context: int = 0  # inference: tokens in the KV cache at the last decode step
    steps: int = 2  # training steps traced (the second shows the steady state)

    def describe(self) -> list[str]:
        """The recipe in words, one item per choice."""
        out = []
        if self.task == "train":
            w = {"fp32": "fp32 weights", "bf16": "bf16 weights (pure bf16)", "fp16": "fp16 weights"}[self.weights_dtype]
            if self.method != "full":
                w = ("base weights 4-bit NF4 (bitsandbytes layout, stand-in), norms/embeddings fp32"
                     if self.method == "qlora" else f"base weights {self.weights_dtype}, frozen")
                w += f"; LoRA rank {self.lora_rank} fp32 adapters on {','.join(self.lora_targets)} (PEFT)"
            out.append(w)
            out.append(f"autocast {self.autocast} (CUDA op lists)" if self.autocast else "no autocast")
            opt = (f"{self.optimizer} ({self.optimizer_impl}" if self.optimizer != "adafactor"
                   else "adafactor (transformers")
            out.append(opt + (", step fused into backward)" if self.optimizer_in_backward else ")"))
            out.append("gradient checkpointing (non-reentrant)" if self.gradient_checkpointing
                       else "no gradient checkpointing")
            out.append(f"micro-batch {self.batch_size} x {self.seq_len} tokens; {self.steps} steps traced")
        else:
            out.append(f"{self.weights_dtype} weights; HF generate replayed: prefill of {self.batch_size} x "
                       f"{self.seq_len} tokens, then a decode step with {self.context} tokens cached "
                       "(DynamicCache)")
        out.append({"flash": "attention: SDPA flash kernel", "efficient": "attention: SDPA memory-efficient kernel",
                    "eager": "attention: eager (unfused scores)"}[self.attention])
        return out


def recipe_from_plan(plan: Plan, *, optimizer_impl: OptimizerImpl | None = None,
                     attention: Attention | None = None) -> Recipe:
    """The recipe a plan implies (see the module docstring); MlrigError for what cannot be traced."""
    w = plan.workload
    from mlrig import quant

    precision = quant.normalise_precision(w.precision)
    compute = quant.compute_dtype(precision)
    attn: Attention = attention or ("flash" if w.flash_attention else "eager")
    if w.task == "inference":
        if compute not in ("bf16", "fp16", "fp32"):
            raise MlrigError(f"trace runs 16/32-bit inference; {w.precision} weights need their engine's kernels "
                             "(use `mlrig plan` without --exact for quantised inference)")
        prompt = max(1, w.prompt_tokens)
        return Recipe(task="inference", weights_dtype=compute, attention=attn,
                      batch_size=w.batch_size, seq_len=prompt, context=max(prompt + 1, w.context))
    t = plan.training
    assert t is not None
    if plan.hardware.tensor_parallel > 1 or plan.hardware.pipeline_parallel > 1 or t.zero_stage > 0:
        raise MlrigError("trace models one GPU (no tensor/pipeline parallelism or ZeRO sharding yet); "
                         "drop --tp/--pp/--zero, or use `mlrig plan` without --exact")
    if t.offload != "none":
        raise MlrigError("trace does not model CPU offload; drop --offload or use `mlrig plan` without --exact")
    o = t.optimizer.strip().lower().replace("_", "-")
    if "8bit" in o or "8-bit" in o or "paged" in o:
        raise MlrigError(f"optimizer {t.optimizer!r} is a bitsandbytes CUDA kernel that cannot be traced on the "
                         "CPU; trace adamw, adamw-bf16, sgd or adafactor, or use `mlrig plan` without --exact")
    if "lion" in o:
        raise MlrigError("Lion is not in torch.optim; trace adamw, adamw-bf16, sgd or adafactor")
    name: Literal["adamw", "sgd", "adafactor"]
    if "adafactor" in o:
        name = "adafactor"
    elif "sgd" in o:
        name = "sgd"
    elif "adam" in o or o in ("", "default"):
        name = "adamw"
    else:
        raise MlrigError(f"unknown optimizer {t.optimizer!r}; trace adamw, adamw-bf16, sgd or adafactor")
    pure16 = "bf16" in o or "pure" in o
    half = "fp16" if compute == "fp16" else "bf16"
    if t.method == "full":
        if compute == "fp32":
            weights, autocast = "fp32", None
        elif pure16:
            weights, autocast = half, None
        else:
            weights, autocast = "fp32", half
    else:
        # PEFT: the frozen base in 16-bit, fp32 adapters, autocast on (HF Trainer bf16=True); AMP
        # precisions (bf16-mixed) keep the base in fp32 too
        weights = "fp32" if compute == "fp32" or quant.master_in_weights(precision) else half
        autocast = None if compute == "fp32" else half
    seq = t.seq_len or w.context
    return Recipe(task="train", method=t.method, weights_dtype=weights, autocast=autocast,
                  optimizer=name, optimizer_impl=optimizer_impl or "fused",
                  optimizer_in_backward="in-bwd" in o or "inbwd" in o, attention=attn,
                  gradient_checkpointing=t.gradient_checkpointing, lora_rank=t.lora_rank,
                  lora_targets=tuple(t.lora_targets) if t.method != "full" else (),
                  batch_size=w.batch_size, seq_len=seq)


def cache_key(config: dict[str, object], recipe: Recipe, layers: int | None) -> str:
    """A stable hash of (model config, recipe, trace version, package versions)."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {}
    for pkg in ("torch", "transformers", "peft"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    blob = json.dumps({"config": config, "recipe": recipe.model_dump(mode="json"), "layers": layers,
                       "v": TRACE_VERSION, "pkgs": versions}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]
