"""mlrig next to a peer estimator, llm-analysis, on the same ~1,000 configurations: speed and figures.

Issue 15 asks for "the benchmark figures side by side with llm-analysis on the same configurations
(both scalar and batch)". This script builds 1,008 configurations that both tools can express,
times both on them in one process, and prints a few configurations' figures from both.

Run (llm-analysis is NOT an mlrig dependency; install it in your own virtual environment only):

    pip install llm-analysis==0.2.2
    python benchmarks/peers.py [--repeats 3]

Without llm-analysis the script prints one line (`pip install llm-analysis==0.2.2 to compare`)
and exits 0. Tests and mlrig never import it. llm-analysis 0.2.2 pins transformers<5 and
huggingface-hub<0.15; pip will downgrade both in that venv (mlrig's `dev` extra wants
transformers 5.23 for `mlrig trace`): reinstall `pip install -e ".[dev]"` afterwards; llm-analysis
only imports `transformers.AutoConfig` (unused here: every model config is given to it as a file)
and works with the newer versions, pip just warns about the pins.

The peer: llm-analysis 0.2.2 (Cheng Li, https://github.com/cli99/llm-analysis, PyPI `llm-analysis`),
Apache License 2.0 (its wheel's LICENSE file and METADATA). Nothing of it is copied into mlrig; this
script only calls its public entry points `llm_analysis.analysis.infer()` and `train()` (the functions
its README's command line wraps), with `log_level="ERROR"` and `output_dir=None` (no files written,
nothing logged, so I/O does not dominate).

The configurations (matched by hand; the mapping is `mlrig_plan()` and `peer_call()` below):
- inference, 864: Llama-2 7B / 13B / 70B x A100-SXM-80GB, A100-SXM-40GB, H100-SXM-80GB, A10G x
  bf16 / int8 weight-only / int4 weight-only x batch 1, 8, 32, 64 x (prompt, output) (512, 128),
  (2048, 256) x tensor parallel 1, 2, 4 (count = TP). mlrig: `engine = "transformers"` (a static
  batch whose KV cache holds batch x (prompt + output) tokens, as llm-analysis assumes; vLLM would
  pre-reserve 90% of the card), precision `bf16` / `gptq-int8` / `int4` (GPTQ/AWQ-style, group 128,
  fp16 compute); llm-analysis: `dtype_name` `w16a16e16` / `w8a16e16` / `w4a16e16`,
  `batch_size_per_gpu` = batch, `seq_len` = prompt, `num_tokens_to_generate` = output, `tp_size` = TP.
- training, 144: Llama-2 7B / 13B x A100-SXM-80GB, A100-SXM-40GB, H100-SXM-80GB x ZeRO 1 / 2 / 3 x
  micro-batch 1, 4 x activation checkpointing none / full x (task, data parallel, seq len)
  (full fine-tune, 4, 2048) and (pretrain, 8, 4096); bf16 weights, AdamW with fp32 master weights
  and states, 4 gradient-accumulation steps. mlrig: `training.method = "full"`, `zero_stage`,
  `activation_checkpointing`, `global_batch_tokens` = micro x seq x DP x 4, `count` = DP;
  llm-analysis: `train(ds_zero, batch_size_per_gpu, gradient_accumulation_steps=4, dp_size,
  seq_len, activation_recomputation` 0 (NONE) / 2 (FULL), flash attention on: its default).
- GPUs: mlrig ids `a100-sxm-80gb`, `a100-sxm-40gb`, `h100-sxm-80gb`, `a10g` = llm-analysis's
  `a100-sxm-80gb`, `a100-sxm-40gb`, `h100-sxm-80gb`, `a10g-pcie-24gb` (its only A10G).
- Models: llm-analysis is given each model as a config file built from mlrig's catalog architecture
  for the same id (the Llama-2 config.json): layers, heads, KV heads, hidden, vocab, max length
  4,096. Its MLP is two matrices (2 x hidden x ffn); Llama's is gated (3 x hidden x intermediate), so
  `ffn_embed_dim` = 1.5 x intermediate gives the same MLP weights and FLOPs. Its own shipped Llama-2
  configs use ffn = 4 x hidden instead, which undercounts Llama-2-70B by ~20% (55.3 B parameters
  of 69.0 B). It always counts the input and output embeddings as one shared matrix, so Llama-2's
  untied lm_head (131 M parameters for 7B, 164 M for 13B, 262 M for 70B) is missing on its side.

What is measured (time.perf_counter; one warm-up pass, then the median of `--repeats` passes):
1. mlrig scalar: `mlrig.planner.evaluate(plan)` per plan dict, configurations/s (the path `plan`,
   `fit`, `compare` and `recommend` run). Split into inference and training rates too. (1) and (3)
   are timed interleaved: chunks of 32 configurations, each run by both tools back to back (order
   alternating), so that load from other users of a shared machine hits both alike.
2. mlrig batch: `mlrig eval FILE.jsonl -o OUT` on the same plans, one per line, as a subprocess:
   lines/s end to end, Python and mlrig start-up included (start-up alone is timed as `eval` of a
   one-line file). In-process: `mlrig.batch.results_for_lines` over chunks of `CHUNK_LINES`, as
   `mlrig eval` runs it (JSON parse, `grid.evaluate_cases`: plans that differ only in batch, context,
   prompt and output share one array pass; model_dump), without the rounding and writing.
3. llm-analysis scalar: `infer()` / `train()` per configuration, configurations/s. Its `infer()`
   raises AssertionError for a configuration that does not fit (counted, not timed separately).
4. llm-analysis batch: it has no batch API; a batch is a Python loop over (3).

Then for 6 configurations the two tools' figures side by side (memory per GPU in GiB = 2^30 bytes;
llm-analysis reports bytes and names a card's "80 GB" as 80 x 2^30 bytes), including llm-analysis
at the efficiencies its README suggests when one "has to make assumptions" (0.7 FLOPS and 0.9
memory efficiency for inference, 0.5 FLOPS for training), because its defaults are 1.0 (peak
hardware: "the lower bound of training or inference latency"). The LAST line printed is
`mlrig_over_llm_analysis_scalar=<ratio>`: mlrig's scalar configurations/s over llm-analysis's, as
the median over all (pass, chunk) pairs of llm-analysis's time / mlrig's time on that chunk (the
ratio of the pass medians is printed beside it; on a loaded machine the paired median is steadier).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PEER_VERSION = "0.2.2"
GA_STEPS = 4  # gradient-accumulation steps in every training configuration
GPUS = {"a100-sxm-80gb": "a100-sxm-80gb", "a100-sxm-40gb": "a100-sxm-40gb",
        "h100-sxm-80gb": "h100-sxm-80gb", "a10g": "a10g-pcie-24gb"}  # mlrig id -> llm-analysis name
PRECISIONS = {"bf16": "w16a16e16", "gptq-int8": "w8a16e16", "int4": "w4a16e16"}  # mlrig -> llm-analysis
MODELS = ["llama-2-7b", "llama-2-13b", "llama-2-70b"]
GIB = 2**30
CHUNK = 32  # configurations per interleaved timing chunk
CLI = [sys.executable, "-c", "import sys; from mlrig.cli import main; sys.argv[0] = 'mlrig'; sys.exit(main())"]


@dataclass(frozen=True)
class Config:
    """One configuration, in neither tool's terms."""

    task: str  # inference | finetune | pretrain
    model: str  # mlrig catalog id
    gpu: str  # mlrig GPU id
    precision: str = "bf16"  # mlrig precision
    batch: int = 1  # inference: concurrent sequences; training: micro-batch per GPU
    prompt: int = 512
    output: int = 128
    tp: int = 1
    zero: int = 0
    seq: int = 2048
    dp: int = 1
    checkpointing: bool = False

    def label(self) -> str:
        if self.task == "inference":
            return (f"{self.model} {self.precision} {self.gpu} x{self.tp} (TP) batch {self.batch}, "
                    f"{self.prompt} in / {self.output} out")
        return (f"{self.task} {self.model} {self.gpu} x{self.dp} (DP), ZeRO-{self.zero}, micro-batch {self.batch}, "
                f"seq {self.seq}, checkpointing {'full' if self.checkpointing else 'none'}")


def configurations() -> list[Config]:
    inference = [Config("inference", m, g, precision=p, batch=b, prompt=pi, output=po, tp=tp)
                 for m, g, p, b, (pi, po), tp in itertools.product(
                     MODELS, GPUS, PRECISIONS, (1, 8, 32, 64), ((512, 128), (2048, 256)), (1, 2, 4))]
    training = [Config(task, m, g, batch=mb, zero=z, seq=seq, dp=dp, checkpointing=ckpt)
                for m, g, z, mb, ckpt, (task, dp, seq) in itertools.product(
                    MODELS[:2], ["a100-sxm-80gb", "a100-sxm-40gb", "h100-sxm-80gb"], (1, 2, 3), (1, 4),
                    (False, True), (("finetune", 4, 2048), ("pretrain", 8, 4096)))]
    return inference + training


def mlrig_plan(c: Config) -> dict[str, Any]:
    """The mlrig plan (docs/PLAN-FORMAT.md) for a configuration."""
    if c.task == "inference":
        return {"model": {"name": c.model},
                "workload": {"task": "inference", "engine": "transformers", "precision": c.precision,
                             "batch_size": c.batch, "prompt_tokens": c.prompt, "output_tokens": c.output},
                "hardware": {"gpu": c.gpu, "count": c.tp, "tensor_parallel": c.tp}}
    return {"model": {"name": c.model},
            "workload": {"task": c.task, "precision": "bf16", "batch_size": c.batch},
            "training": {"method": "full", "optimizer": "adamw", "seq_len": c.seq, "zero_stage": c.zero,
                         "activation_checkpointing": "full" if c.checkpointing else "none",
                         "global_batch_tokens": c.batch * c.seq * c.dp * GA_STEPS},
            "hardware": {"gpu": c.gpu, "count": c.dp}}


def peer_model_configs(tmp: Path) -> dict[str, str]:
    """llm-analysis model configs (its ModelConfig fields), one JSON file per model, built from mlrig's
    catalog architecture; registered through its documented route (a config file's path passed as
    the model name), then called by name. Returns mlrig id -> llm-analysis name."""
    from llm_analysis.config import get_model_config_by_name

    from mlrig.planner import parse_plan, resolve_arch

    names = {}
    for model in MODELS:
        a = resolve_arch(parse_plan({"model": {"name": model}}))
        ffn = a.intermediate_size * 3 // 2  # plain 2-matrix MLP with the gated MLP's weights and FLOPs
        cfg = {"name": f"mlrig-shape-{model}", "num_layers": a.num_layers, "n_head": a.num_heads,
               "hidden_dim": a.hidden_size, "vocab_size": a.vocab_size, "max_seq_len": a.max_position_embeddings,
               "num_key_value_heads": a.num_kv_heads, "ffn_embed_dim": ffn,
               "expansion_ratio": ffn / a.hidden_size, "model_type": "llama"}
        path = tmp / f"{cfg['name']}.json"
        path.write_text(json.dumps(cfg))
        names[model] = get_model_config_by_name(str(path)).name
    return names


def parameter_check(names: dict[str, str]) -> str:
    """Total parameters per model as each tool counts them (the mapping's sanity check)."""
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import get_gpu_config_by_name, get_model_config_by_name
    from llm_analysis.logger import logger

    from mlrig.planner import parse_plan, resolve_arch

    logger.setLevel("ERROR")  # what infer()/train() do with log_level="ERROR"
    out = []
    for model, name in names.items():
        mine = resolve_arch(parse_plan({"model": {"name": model}})).total_params
        peer = LLMAnalysis(get_model_config_by_name(name), get_gpu_config_by_name("a100-sxm-80gb")).total_num_params
        out.append(f"{model} {mine / 1e9:.2f} / {peer / 1e9:.2f}")
    return "parameters, B (mlrig / llm-analysis with the configs given): " + ", ".join(out)


def peer_call(c: Config, names: dict[str, str], **efficiency: float) -> dict[str, Any]:
    """llm-analysis's summary dict for a configuration (raises AssertionError where it finds no fit)."""
    from llm_analysis.analysis import infer, train

    if c.task == "inference":
        return infer(model_name=names[c.model], gpu_name=GPUS[c.gpu], dtype_name=PRECISIONS[c.precision],
                     log_level="ERROR", batch_size_per_gpu=c.batch, tp_size=c.tp, seq_len=c.prompt,
                     num_tokens_to_generate=c.output, output_dir=None, **efficiency)
    return train(model_name=names[c.model], gpu_name=GPUS[c.gpu], dtype_name="w16a16e16", log_level="ERROR",
                 batch_size_per_gpu=c.batch, gradient_accumulation_steps=GA_STEPS, seq_len=c.seq,
                 ds_zero=c.zero, dp_size=c.dp, activation_recomputation=2 if c.checkpointing else 0,
                 output_dir=None, **efficiency)


def timed(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall seconds of `repeats` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_eval(path: Path, out: Path) -> None:
    r = subprocess.run([*CLI, "eval", str(path), "-o", str(out)], capture_output=True, text=True)
    if r.returncode not in (0, 1):  # 1: some line had an error (counted from the output)
        raise SystemExit(f"mlrig eval failed ({r.returncode}): {r.stderr.strip()[-500:]}")


def side_by_side(c: Config, names: dict[str, str]) -> tuple[list[tuple[str, str, str, str]], str | None]:
    """Rows (figure, mlrig, llm-analysis at its defaults, llm-analysis at its README's suggested
    efficiencies), and llm-analysis's refusal message where it refused the configuration."""
    from mlrig.planner import evaluate

    r = evaluate(mlrig_plan(c))
    m, p = r.memory, r.performance
    suggested = {"flops_efficiency": 0.7, "hbm_memory_efficiency": 0.9} if c.task == "inference" else \
        {"flops_efficiency": 0.5}
    peers: list[dict[str, Any] | str] = []
    for eff in ({}, suggested):
        try:
            peers.append(peer_call(c, names, **eff))
        except AssertionError as exc:
            peers.append(str(exc))

    def g(v: float | None) -> str:
        return "-" if v is None else f"{v:,.2f}"

    def row(name: str, mine: float | None, key: Callable[[dict[str, Any]], float]) -> tuple[str, str, str, str]:
        cells = ["refused" if isinstance(p, str) else g(key(p)) for p in peers]
        return (name, g(mine), cells[0], cells[1])

    peer_fits = ["no" if isinstance(p, str) else
                 "yes" if c.task == "inference" or p["memory_left_per_gpu"] >= 0 else "no" for p in peers]
    fits = ("fits", "yes" if r.fits else "no", peer_fits[0], peer_fits[1])
    refusal = next((p for p in peers if isinstance(p, str)), None)
    if c.task == "inference":
        assert m is not None
        return [fits,
                row("weights GiB/GPU", m.weights_gib, lambda d: d["weight_memory_per_gpu"] / GIB),
                row("KV cache GiB/GPU", m.kv_cache_gib, lambda d: d["kv_cache_memory_per_gpu"] / GIB),
                row("total GiB/GPU (llm-a: sum of parts)", m.per_gpu_gib,
                    lambda d: (d["weight_memory_per_gpu"] + d["kv_cache_memory_per_gpu"]
                               + max(d["prefill_activation_memory_per_gpu"],
                                     d["decode_activation_memory_per_gpu"])) / GIB),
                row("decode ms/token (TPOT)", p.tpot_ms if p else None, lambda d: d["decode_latency"] * 1e3),
                row("decode tok/s per sequence", p.decode_tok_s if p else None, lambda d: 1 / d["decode_latency"]),
                row("prefill ms (TTFT)", p.ttft_ms if p else None, lambda d: d["prefill_latency"] * 1e3)], refusal
    assert m is not None
    tokens = c.batch * c.seq * c.dp * GA_STEPS
    return [fits,
            row("weights GiB/GPU", m.weights_gib, lambda d: d["weight_memory_per_gpu"] / GIB),
            row("gradients GiB/GPU", m.gradients_gib, lambda d: d["gradient_memory_per_gpu"] / GIB),
            row("optimizer GiB/GPU", m.optimizer_gib, lambda d: d["optimizer_state_memory_per_gpu"] / GIB),
            row("activations GiB/GPU", m.activations_gib, lambda d: d["activation_memory_per_gpu"] / GIB),
            row("total GiB/GPU", m.per_gpu_gib, lambda d: d["(weight+op_state+grad+act)_memory_per_gpu"] / GIB),
            row("step time s", p.step_time_s if p else None, lambda d: d["latency_per_iter"]),
            row("tokens/s (all GPUs)", p.train_tokens_per_s if p else None,
                lambda d: tokens / d["latency_per_iter"])], refusal


SHOWN = [
    Config("inference", "llama-2-7b", "a100-sxm-80gb", batch=1, prompt=512, output=128),
    Config("inference", "llama-2-13b", "a10g", precision="int4", batch=8, prompt=2048, output=256),
    Config("inference", "llama-2-70b", "h100-sxm-80gb", batch=32, prompt=2048, output=256, tp=4),
    Config("inference", "llama-2-70b", "a100-sxm-80gb", precision="gptq-int8", batch=64, prompt=512, output=128,
           tp=2),
    Config("finetune", "llama-2-7b", "a100-sxm-80gb", batch=4, zero=3, seq=2048, dp=4, checkpointing=True),
    Config("pretrain", "llama-2-13b", "h100-sxm-80gb", batch=1, zero=1, seq=4096, dp=8),
]

WHY = """\
Why the figures differ (llm-analysis 0.2.2's own assumptions, read from its source and README):
- Speed: llm-analysis defaults to flops_efficiency = 1.0 and hbm_memory_efficiency = 1.0 (constant.py:
  FLOPS_EFFICIENCY, HBM_MEMORY_EFFICIENCY), i.e. peak datasheet FLOPS and bandwidth, a lower bound on
  latency by its README; the last column uses its README's suggested 0.7 / 0.9 (inference) and 0.5
  (training). mlrig uses calibrated per-engine-family efficiencies, fixed per-step and per-token
  overheads, and (transformers engine) the library's own launch cost, so its decode is slower still.
- Training step: llm-analysis's step is FLOPs / (TP x PP x peak x efficiency), with no optimizer step,
  no gradient sync and no ZeRO gather time; mlrig adds those (ZeRO-3 all-gathers, optimizer step).
- Memory: llm-analysis counts weights, KV cache and activations (inference: one layer's, the
  largest) and nothing else (no CUDA context, allocator slack or workspace); mlrig adds the engine's
  and the allocator's overheads and, for transformers, the whole batch's prefill peak.
  Its int4/int8 weights are exactly 4/8 bits (mlrig: group-128 scales and zeros, 4.16 / 8.19 bits) and its
  embeddings are one shared matrix (Llama-2's untied lm_head is missing). Training: both count
  12 B of AdamW state per parameter (fp32 master + two moments); llm-analysis holds gradients in
  fp32 (4 B/param, "upcasted" before the step), mlrig in bf16 (2 B/param).
- Fit: llm-analysis refuses (AssertionError) only when its sum of parts exceeds the card's whole
  memory, which it takes as the datasheet "GB" read as GiB (A10G: 24 GiB; mlrig: 22.5 GiB usable);
  train() refuses when not even its micro-batch fits (fits here = no refusal and
  memory_left_per_gpu >= 0). mlrig counts more (CUDA context, the whole batch's prefill peak) and
  the real capacity, so it says "does not fit" more often (transformers would then offload to the
  CPU, which its decode figure shows)."""


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per figure (median reported)")
    args = ap.parse_args()
    if importlib.util.find_spec("llm_analysis") is None:
        print(f"llm-analysis is not installed: pip install llm-analysis=={PEER_VERSION} to compare")
        return 0
    from importlib.metadata import version

    if version("llm-analysis") != PEER_VERSION:
        print(f"note: llm-analysis {version('llm-analysis')} installed; these mappings were written for "
              f"{PEER_VERSION}")
    import llm_analysis.analysis  # noqa: F401  (its import pulls transformers: kept out of the timings)

    from mlrig.batch import CHUNK_LINES, results_for_lines
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate

    configs = configurations()
    inference = [c for c in configs if c.task == "inference"]
    training = [c for c in configs if c.task != "inference"]
    plans = [mlrig_plan(c) for c in configs]
    lines = [json.dumps({"id": str(i), **p}).encode() for i, p in enumerate(plans)]

    with tempfile.TemporaryDirectory(prefix="mlrig-peers-") as tmpdir:
        tmp = Path(tmpdir)
        names = peer_model_configs(tmp)
        def mlrig_fits(ps: list[dict[str, Any]]) -> list[bool]:
            fits = []
            for p in ps:
                try:
                    fits.append(bool(evaluate(p).fits))
                except MlrigError:
                    fits.append(False)
            return fits

        def peer_fits(cs: list[Config]) -> list[bool]:
            fits = []
            for c in cs:
                try:
                    d = peer_call(c, names)
                    fits.append(c.task == "inference" or d["memory_left_per_gpu"] >= 0)
                except AssertionError:
                    fits.append(False)
            return fits

        def inproc_batch() -> None:
            numbered = list(enumerate(lines, 1))
            for i in range(0, len(numbered), CHUNK_LINES):
                results_for_lines(numbered[i:i + CHUNK_LINES])

        # Scalar paths, interleaved: each chunk of CHUNK configurations is timed with mlrig and with
        # llm-analysis back to back (order alternating), so a burst of load on this shared machine
        # hits both tools alike; a pass is the sum over its chunks. Warm-up pass first (fits kept).
        chunks = [cs[i:i + CHUNK] for cs in (inference, training) for i in range(0, len(cs), CHUNK)]
        chunk_plans = [[mlrig_plan(c) for c in ch] for ch in chunks]
        fits_mlrig = [f for ps in chunk_plans for f in mlrig_fits(ps)]
        fits_peer = [f for ch in chunks for f in peer_fits(ch)]
        per_pass: list[list[tuple[float, float]]] = []  # [pass][chunk] -> (mlrig s, llm-analysis s)
        for _ in range(args.repeats):
            pairs = []
            for i, (ch, ps) in enumerate(zip(chunks, chunk_plans, strict=True)):
                spans = {}
                for tool in (("mlrig", "peer") if i % 2 == 0 else ("peer", "mlrig")):
                    t0 = time.perf_counter()
                    if tool == "mlrig":
                        mlrig_fits(ps)
                    else:
                        peer_fits(ch)
                    spans[tool] = time.perf_counter() - t0
                pairs.append((spans["mlrig"], spans["peer"]))
            per_pass.append(pairs)

        def med(tool: int, task: str | None = None) -> float:
            """Median over passes of one tool's time for all chunks (or one task's)."""
            return statistics.median(
                sum(pair[tool] for ch, pair in zip(chunks, pairs, strict=True)
                    if task is None or (ch[0].task == "inference") == (task == "inference"))
                for pairs in per_pass)

        t_mlrig, t_mlrig_inf, t_mlrig_train = med(0), med(0, "inference"), med(0, "training")
        t_peer, t_peer_inf, t_peer_train = med(1), med(1, "inference"), med(1, "training")
        ratio = statistics.median(peer_s / mlrig_s for pairs in per_pass for mlrig_s, peer_s in pairs)
        default_engine = [{**p, "workload": {k: v for k, v in p["workload"].items() if k != "engine"}}
                          for c, p in zip(configs, plans, strict=True) if c.task == "inference"]
        t_mlrig_default = timed(lambda: mlrig_fits(default_engine), args.repeats)
        t_inproc = timed(inproc_batch, args.repeats)

        cases, one, out = tmp / "cases.jsonl", tmp / "one.jsonl", tmp / "out.jsonl"
        cases.write_bytes(b"\n".join(lines) + b"\n")
        one.write_bytes(lines[0] + b"\n")
        t_eval = timed(lambda: run_eval(cases, out), args.repeats)
        results = [json.loads(x) for x in out.read_text().splitlines()]
        errors = sum(r["error"] is not None for r in results)
        if len(results) != len(lines):
            raise SystemExit(f"mlrig eval wrote {len(results)} lines for {len(lines)}")
        t_start = timed(lambda: run_eval(one, out), args.repeats)

    n, ni, nt = len(configs), len(inference), len(training)
    print(f"{n:,} configurations ({ni} inference, {nt} training), matched by hand (module docstring); "
          f"llm-analysis {version('llm-analysis')}, Python {sys.version.split()[0]}; "
          f"median of {args.repeats} passes after a warm-up")
    print(parameter_check(names))
    print()
    head = f"{'tool / path':52s} {'configs/s':>10s} {'ms/config':>10s}  notes"
    print(head)
    print("-" * len(head))

    def line(label: str, count: int, seconds: float, note: str = "") -> None:
        print(f"{label:52s} {count / seconds:10,.0f} {seconds / count * 1e3:10.3f}  {note}")

    line("mlrig scalar: planner.evaluate(plan)", n, t_mlrig, "all configurations, one process, one core")
    line("  inference plans", ni, t_mlrig_inf)
    line("  training plans", nt, t_mlrig_train)
    line("  inference plans, default engine (vLLM here)", ni, t_mlrig_default,
         "the same plans without engine = transformers (not matched)")
    line("mlrig batch: `mlrig eval cases.jsonl -o out` (process)", n, t_eval,
         f"end to end, start-up included ({t_start * 1e3:.0f} ms for a 1-line file); {errors} error lines")
    line("  the same, start-up taken off", n, t_eval - t_start)
    line("mlrig batch in-process: batch.results_for_lines", n, t_inproc,
         "eval's chunks: parse, grid.evaluate_cases (array pass per plan shape), dump")
    line("llm-analysis scalar: infer() / train()", n, t_peer, "log_level=ERROR, output_dir=None")
    line("  inference: infer()", ni, t_peer_inf)
    line("  training: train()", nt, t_peer_train)
    print(f"{'llm-analysis batch':52s} {'-':>10s} {'-':>10s}  no batch API: a batch is a loop over "
          "infer()/train(), the scalar row")
    print()
    both = sum(a and b for a, b in zip(fits_mlrig, fits_peer, strict=True))
    print(f"fits: mlrig {sum(fits_mlrig)}, llm-analysis {sum(fits_peer)}, both {both}, disagree "
          f"{sum(a != b for a, b in zip(fits_mlrig, fits_peer, strict=True))} of {n}")
    print(f"scalar speed ratio, mlrig over llm-analysis: {ratio:.2f} (median over {len(per_pass[0])} chunks x "
          f"{len(per_pass)} passes of llm-analysis's time / mlrig's on the same chunk); from the pass medians "
          f"above: {t_peer / t_mlrig:.2f}")

    for c in SHOWN:
        print()
        print(c.label())
        print(f"  {'figure':38s} {'mlrig':>12s} {'llm-a (1.0)':>12s} {'llm-a (README)':>15s}")
        rows, refusal = side_by_side(c, names)
        for name, mine, peer, peer_eff in rows:
            print(f"  {name:38s} {mine:>12s} {peer:>12s} {peer_eff:>15s}")
        if refusal:
            print(f"  llm-analysis refused: {' '.join(refusal.split())[:110]}")
    print()
    print(WHY)
    print(f"mlrig_over_llm_analysis_scalar={ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
