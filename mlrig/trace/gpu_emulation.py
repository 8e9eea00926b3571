"""What differs on a CUDA GPU, re-created for fake CPU tensors (torch imported here).

Fake tensors on the CPU run the CPU's code paths; three of them allocate differently on a GPU:

- Autocast. CUDA autocast runs softmax, log_softmax, sum, cumsum, prod with an fp32 output and
  layer_norm, group_norm, exp, log, pow, rsqrt, nll_loss, logsumexp, ... in fp32, where CPU autocast
  leaves them in bf16 (the CUDA op lists: PyTorch `aten/src/ATen/autocast_mode.cpp`, the
  `fp32` and `fp32_set_opt_dtype` lists, and the "CUDA Ops that can autocast to float32" table of
  https://pytorch.org/docs/stable/amp.html). `install_cuda_autocast_lists` registers kernels for
  the AutocastCPU dispatch key that apply the CUDA policy to those ops. The matmul list is the same
  on both, and so is autocast's cache of casted weights.
- Attention. `F.scaled_dot_product_attention` on CUDA picks the flash kernel (fp16/bf16, no mask,
  head dim <= 256) or the memory-efficient one (with a mask); on the CPU it would build the S x S
  scores. `SdpaRouter` sends it to the CUDA aten ops (they have fake kernels and autograd formulas)
  and allocates the flash backward's fp32 `dq_accum` and `softmax_d` workspaces, and the GQA
  `dk/dv_expanded` buffers, as `mha_bwd` in flash-attention's `csrc/flash_attn/flash_api.cpp`
  (FlashAttention-2, the version inside PyTorch's SDPA) does.
- The optimizer implementation is passed explicitly (`foreach` / `fused`), since CPU tensors would
  default to the for-loop (`torch.optim.optimizer._default_to_fused_or_foreach`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
import torch.nn.functional as F

_LIB: Any = None

# CUDA autocast: ops with an optional dtype argument get dtype=float32 (no input copy, fp32 output).
_FP32_SET_OPT_DTYPE = ("softmax.int", "log_softmax.int", "cumsum.default", "prod.default", "prod.dim_int",
                       "sum.default", "sum.dim_IntList")
# CUDA autocast: floating inputs cast to fp32 (the subset of the CUDA fp32 list that CPU autocast
# lacks and that language models reach).
_FP32 = ("exp.default", "log.default", "log1p.default", "expm1.default", "rsqrt.default", "reciprocal.default",
         "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus.default", "layer_norm.default",
         "native_layer_norm.default", "group_norm.default", "nll_loss_nd.default", "nll_loss.default",
         "logsumexp.default", "kl_div.default", "l1_loss.default", "smooth_l1_loss.default",
         "binary_cross_entropy_with_logits.default", "cosine_similarity.default", "sinh.default",
         "cosh.default", "tan.default", "erfinv.default", "acos.default", "asin.default")


def _to_fp32(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64:
        return x.float()
    if isinstance(x, list | tuple) and x and isinstance(x[0], torch.Tensor):
        return type(x)(_to_fp32(y) for y in x)
    return x


def install_cuda_autocast_lists() -> None:
    """Once per process: CPU autocast follows CUDA autocast's fp32 lists (see the module docstring)."""
    global _LIB
    if _LIB is not None:
        return
    keyset = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
    lib = torch.library.Library("aten", "IMPL")

    def opt_dtype(op: Any) -> Any:
        def kernel(*args: Any, **kwargs: Any) -> Any:
            with torch._C._ExcludeDispatchKeyGuard(keyset):
                x = args[0]
                if (kwargs.get("dtype") is None and x.is_floating_point() and x.dtype != torch.float64
                        and torch.is_autocast_enabled("cpu")):
                    kwargs = {**kwargs, "dtype": torch.float32}
                return op(*args, **kwargs)
        return kernel

    def fp32(op: Any) -> Any:
        def kernel(*args: Any, **kwargs: Any) -> Any:
            with torch._C._ExcludeDispatchKeyGuard(keyset):
                if torch.is_autocast_enabled("cpu"):
                    args = tuple(_to_fp32(a) for a in args)
                return op(*args, **kwargs)
        return kernel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _FP32_SET_OPT_DTYPE:
            base, overload = name.split(".")
            op = getattr(getattr(torch.ops.aten, base), overload, None)
            if op is not None:
                lib.impl(name.removesuffix(".default"), opt_dtype(op), "AutocastCPU")
        for name in _FP32:
            base, overload = name.split(".")
            packet = getattr(torch.ops.aten, base, None)
            op = getattr(packet, overload, None) if packet is not None else None
            if op is not None:
                lib.impl(name.removesuffix(".default"), fp32(op), "AutocastCPU")
    _LIB = lib


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


class _FlashAttention(torch.autograd.Function):
    """SDPA's flash path with the backward workspaces of FlashAttention-2's `mha_bwd`."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                scale: float | None) -> torch.Tensor:
        out = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
        o, lse, cq, ck, mq, mk, seed, offset = out[:8]
        ctx.save_for_backward(q, k, v, o, lse)
        # the philox seed/offset are not saved tensors (non-reentrant checkpointing miscounts them)
        ctx.extra = (cq, ck, mq, mk, causal, scale, seed, offset)
        return o

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        q, k, v, o, lse = ctx.saved_tensors
        cq, ck, mq, mk, causal, scale, seed, offset = ctx.extra
        b, h, s, d = q.shape
        hk, sk = k.shape[1], k.shape[2]
        # flash_api.cpp mha_bwd: softmax_d (fp32) always; dq_accum (fp32) when the k loop runs
        # (seqlen_k > block size: 128 for head dim > 64, else 256); dk/dv_expanded for GQA.
        work = [torch.empty((b, h, _round_up(s, 128)), dtype=torch.float32)]
        if sk > (128 if d > 64 else 256):
            hd = _round_up(d, 32) if d <= 192 else 256
            work.append(torch.empty((b, _round_up(s, 128), h, hd), dtype=torch.float32))
        if hk != h:
            work += [torch.empty((b, sk, h, d), dtype=q.dtype), torch.empty((b, sk, h, d), dtype=q.dtype)]
        dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
            grad.contiguous(), q, k, v, o, lse, cq, ck, mq, mk, 0.0, causal, seed, offset, scale=scale)
        del work
        return dq, dk, dv, None, None


class SdpaRouter:
    """Route `F.scaled_dot_product_attention` as CUDA's SDPA dispatcher would (`sdp_utils.cpp`).

    A context manager that replaces the function in `torch.nn.functional` (a TorchFunctionMode is
    not active when non-reentrant checkpointing recomputes inside backward, so it would recompute
    with the CPU kernel)."""

    def __init__(self, kernel: str = "flash") -> None:
        self.kernel = kernel
        self.used: set[str] = set()
        self._saved: Any = None

    def __enter__(self) -> SdpaRouter:
        self._saved = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = self._sdpa  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        F.scaled_dot_product_attention = self._saved

    def _sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None,
              dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
              enable_gqa: bool = False) -> torch.Tensor:
        if torch.is_autocast_enabled("cpu"):  # SDPA is on CUDA autocast's lower-precision list
            dt = torch.get_autocast_dtype("cpu")
            q, k, v = (x.to(dt) if x.dtype == torch.float32 else x for x in (q, k, v))
        d = q.shape[-1]
        half = q.dtype in (torch.float16, torch.bfloat16)
        if self.kernel == "flash" and half and attn_mask is None and d <= 256 and k.shape[-1] == d == v.shape[-1]:
            self.used.add("flash")
            if k.shape[1] != q.shape[1] and not enable_gqa:
                raise RuntimeError("SDPA with different query and key heads needs enable_gqa=True")
            out: torch.Tensor = _FlashAttention.apply(q, k, v, bool(is_causal), scale)
            return out
        # memory-efficient kernel: no GQA, so the key/value heads are repeated (as sdpa's fallback does)
        if k.shape[1] != q.shape[1]:
            rep = q.shape[1] // k.shape[1]
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        bias = None
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:  # sdp_utils convert_boolean_attn_mask: a float copy
                bias = torch.zeros(attn_mask.shape, dtype=q.dtype).masked_fill_(attn_mask.logical_not(), -math.inf)
            else:
                bias = attn_mask.to(q.dtype)
            bias = bias.expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
        self.used.add("efficient")
        need_lse = torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v))
        res = torch.ops.aten._scaled_dot_product_efficient_attention(
            q, k, v, bias, need_lse, dropout_p, bool(is_causal) and attn_mask is None, scale=scale)
        return res[0]


__all__ = ["SdpaRouter", "install_cuda_autocast_lists"]
