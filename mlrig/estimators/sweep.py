"""Vectorised sweep: memory and speed for a grid of models x GPUs x precisions x batch x context x TP.

The same roofline as `performance.py` (decode step and prefill at one engine), evaluated with numpy
broadcasting over a 6-D grid, axes in that order. Per-(model, precision), per-(model, batch) and
per-(model, context) terms are computed once with the scalar helpers, so the two paths agree
(tests/test_sweep.py checks a sample). Memory is weights/TP + KV(batch x context)/TP + a fixed
runtime overhead (CUDA context + allocator slack, 1 GiB per GPU; the detailed per-engine
accounting lives in mlrig.estimators.memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlrig import quant
from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators import performance as perf
from mlrig.units import GiB

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.models import ModelArch

RUNTIME_OVERHEAD_BYTES = 1 * GiB  # CUDA context + allocator slack per GPU (module docstring)


@dataclass
class SweepResult:
    """Arrays of shape (models, gpus, precisions, batches, contexts, tps)."""

    memory_per_gpu_bytes: Any
    fits: Any
    decode_tok_s: Any  # per sequence
    throughput_tok_s: Any  # batch x decode
    prefill_tok_s: Any  # prompt of `context` tokens, whole batch

    @property
    def size(self) -> int:
        return int(self.decode_tok_s.size)


def sweep(
    archs: list[ModelArch],
    gpus: list[GPU],
    precisions: list[str],
    batches: list[int],
    contexts: list[int],
    tps: list[int],
    engine: str = "vllm",
) -> SweepResult:
    """Memory per GPU, fit, decode / throughput / prefill tokens/s for every combination of the
    inputs at one engine (the scalar roofline of `performance.py`, vectorised; module docstring)."""
    import numpy as np

    from mlrig.catalog.interconnects import default_link

    axes = {"models": archs, "gpus": gpus, "precisions": precisions, "batches": batches, "contexts": contexts,
            "tps": tps}
    for name, values in axes.items():
        if not values:
            raise MlrigError(f"sweep needs at least one value in {name}; give a non-empty list")
    for name, ints in (("batches", batches), ("contexts", contexts), ("tps", tps)):
        if min(ints) < 1:
            raise MlrigError(f"sweep {name} must be >= 1, got {min(ints)}; drop the zero or negative values")
    eng = perf.engine_family(engine, precisions[0], gpus[0])
    M, P, B, C = len(archs), len(precisions), len(batches), len(contexts)
    b = np.asarray(batches, dtype=np.float64)
    c = np.asarray(contexts, dtype=np.float64)
    t = np.asarray(tps, dtype=np.float64)

    # ---- per model x precision / batch / context (scalar helpers, small loops) ----
    wbytes = np.array([[perf.model_weight_bytes(a, p) for p in precisions] for a in archs])  # M,P
    kvb = np.array(
        [quant.kv_bytes_per_element(perf.default_kv_precision(p)) for p in precisions]
    )  # P
    kv_per_tok = np.array([[a.kv_values_per_token(int(x)) for x in contexts] for a in archs])  # M,C
    mm = np.array([perf.matmul_params(a) for a in archs])  # M
    kv_reads = np.array([perf.decode_kv_read_factor(a, eng) for a in archs])  # M
    layers = np.array([a.num_layers for a in archs], dtype=np.float64)
    hidden = np.array([a.hidden_size for a in archs], dtype=np.float64)
    read_dec = np.array([[perf.read_fraction(a, int(x)) for x in batches] for a in archs])  # M,B
    read_pre = np.array(
        [[[perf.read_fraction(a, int(x * y)) for y in contexts] for x in batches] for a in archs]
    )  # M,B,C
    att_dec = np.array([[perf.attention_flops(a, 1, int(x)) for x in contexts] for a in archs])  # M,C
    att_pre = np.array([[perf.attention_flops(a, int(x), int(x)) for x in contexts] for a in archs])  # M,C
    heads = np.array([perf.lm_head_params(a) for a in archs])  # M

    # ---- per GPU / precision ----
    mcls = [perf.gpu_memory_class(g) for g in gpus]
    bw = np.array([g.memory_bandwidth_gb_s * 1e9 * perf.bandwidth_efficiency(g, eng) for g in gpus])
    fmt_table = eff.FORMAT_DECODE_EFF.get(eng, eff.FORMAT_DECODE_EFF["default"])
    fmt = np.array([fmt_table[perf.format_family(p)] for p in precisions])  # P
    peak = np.zeros((len(gpus), P))
    for i, (g, m) in enumerate(zip(gpus, mcls, strict=True)):
        for j, p in enumerate(precisions):
            dt = perf.gemm_dtype(p, eng)
            pk = perf.peak_tflops(g, dt, eng) or 0.0
            ce = eff.COMPUTE_EFF[eng][m] * (
                eff.QUANT_PREFILL_EFF if perf.format_family(p) != "f16" and dt == "fp16" else 1.0
            )
            peak[i, j] = pk * 1e12 * ce
    peak = np.where(peak > 0, peak, np.inf)
    cap = np.array([g.capacity_gib * GiB for g in gpus])
    links = [[default_link(g.pcie_gen, g.nvlink_gb_s, int(x), 1, g.nvlink_max_gpus) for x in tps] for g in gpus]
    lat = np.array([[lk.latency_us * 1e-6 for lk in row] for row in links])  # G,T
    lbw = np.array([[lk.bandwidth_gb_s * 1e9 for lk in row] for row in links])  # G,T

    # ---- broadcast: axes (M, G, P, B, C, T) ----
    Mx = (slice(None), None, None, None, None, None)
    Gx = (None, slice(None), None, None, None, None)
    Px = (None, None, slice(None), None, None, None)
    Bx = (None, None, None, slice(None), None, None)
    Cx = (None, None, None, None, slice(None), None)
    Tx = (None, None, None, None, None, slice(None))
    MP = (slice(None), None, slice(None), None, None, None)
    MB = (slice(None), None, None, slice(None), None, None)
    MC = (slice(None), None, None, None, slice(None), None)
    MBC = (slice(None), None, None, slice(None), slice(None), None)
    GP = (None, slice(None), slice(None), None, None, None)
    GT = (None, slice(None), None, None, None, slice(None))

    kv_seq = kv_per_tok[MC] * c[Cx] * kvb[Px]  # bytes per sequence
    mem = wbytes[MP] / t[Tx] + b[Bx] * kv_seq / t[Tx] + RUNTIME_OVERHEAD_BYTES
    fits = mem <= cap[Gx]

    ranks = t[Tx]
    steps = 2.0 * (ranks - 1.0)

    def comm(tokens: Any) -> Any:
        n_bytes = 2.0 * hidden[Mx] * tokens
        per = steps * lat[GT] + np.where(ranks > 1, steps / ranks, 0.0) * n_bytes / lbw[GT]
        return 2.0 * layers[Mx] * per

    # decode step
    w_read = wbytes[MP] * read_dec[MB]
    mem_s = (w_read / (bw[Gx] * fmt[Px]) + b[Bx] * kv_seq * kv_reads[Mx] / bw[Gx]) / t[Tx]
    flops = b[Bx] * (2.0 * mm[Mx] + att_dec[MC])
    comp_s = flops / peak[GP] / t[Tx]
    over = layers[Mx] * eff.LAYER_OVERHEAD_S[eng] + eff.STEP_OVERHEAD_S[eng]
    dec_s = np.maximum(comp_s, mem_s) + over + comm(b[Bx])

    # prefill of `context` tokens per sequence
    pflops = b[Bx] * (2.0 * (mm - heads)[Mx] * c[Cx] + 2.0 * heads[Mx] + att_pre[MC])
    pw = wbytes[MP] * read_pre[MBC]
    pmem_s = (pw / (bw[Gx] * fmt[Px]) + b[Bx] * kv_seq / bw[Gx]) / t[Tx]
    pcomp_s = pflops / peak[GP] / t[Tx]
    pover = (
        layers[Mx] * eff.LAYER_OVERHEAD_S[eng]
        + b[Bx] * c[Cx] * layers[Mx] * eff.PREFILL_TOKEN_LAYER_S[eng] * hidden[Mx] / eff.PREFILL_REF_HIDDEN / t[Tx]
    )
    pre_s = np.maximum(pcomp_s, pmem_s) + pover + comm(b[Bx] * c[Cx])

    shape = (M, len(gpus), P, B, C, len(tps))
    dec_tok = np.broadcast_to(1.0 / dec_s, shape)
    return SweepResult(
        memory_per_gpu_bytes=np.broadcast_to(mem, shape),
        fits=np.broadcast_to(fits, shape),
        decode_tok_s=dec_tok,
        throughput_tok_s=dec_tok * b[Bx],
        prefill_tok_s=np.broadcast_to(b[Bx] * c[Cx] / pre_s, shape),
    )
