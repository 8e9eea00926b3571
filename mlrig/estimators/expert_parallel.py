"""Expert parallelism for inference (`hardware.expert_parallel`): MoE experts split whole across GPUs.

Serving engines run a MoE model's routed experts either tensor-parallel (every GPU holds a 1/TP slice of
every expert: vLLM's default, "expert layers form a tensor parallel group of size DP x TP") or
expert-parallel (`vllm serve --enable-expert-parallel`, EP = TP x DP; SGLang `--ep-size`; TensorRT-LLM
`moe_expert_parallel_size`): each GPU holds E / EP whole experts (vLLM docs, "Data Parallel Deployment" and
"Expert Parallel Deployment", docs.vllm.ai v0.10-v0.12, 2025). Two layouts:
- EP inside the tensor-parallel group (EP divides TP; vLLM with DP = 1 has EP = TP): attention and the dense
  layers stay TP-sharded, the hidden states are already on every rank, so no token moves before the
  experts and their outputs are summed by the all-reduce TP does anyway;
- EP across data-parallel attention (EP = TP x DP, DP > 1: `--tp 1 --ep 8` on 8 GPUs, as DeepSeek-V3 is
  served): each attention group holds its own sequences and a copy of the dense weights, and every MoE
  layer sends each token's hidden state to the ranks of its top-k experts and back: a dispatch and a
  combine all-to-all (DeepSeek-V3 technical report, arXiv 2412.19437, sec. 3.4: EP32 prefill / EP320
  decode with dispatch and combine per MoE layer; vLLM's all2all backends: allgather_reducescatter,
  DeepEP high-throughput / low-latency).
The memory effect: whole experts per GPU (the busiest holds ceil(E / EP)). The speed effect: a decode
step waits for the GPU whose experts the batch touches most (routing is not balanced per step: DeepSeek-V3
sec. 3.4 deploys redundant experts to even it out), and, with DP attention, the all-to-alls over the link.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from mlrig import vec
from mlrig.vec import Num

if TYPE_CHECKING:
    from mlrig.catalog.models import ModelArch
    from mlrig.estimators.performance import PassCost
    from mlrig.estimators.resolved import ResolvedPlan

# engines with an expert-parallel MoE path (vLLM --enable-expert-parallel, SGLang --ep-size, TensorRT-LLM
# moe_expert_parallel_size, LMDeploy --ep)
EP_ENGINES = ("vllm", "sglang", "trt-llm", "lmdeploy")
# bytes per hidden-state element sent by the dispatch and returned by the combine (16-bit activations;
# DeepEP can dispatch in FP8, DeepSeek-V3 sec. 3.3.2, which would halve the dispatch)
A2A_BYTES_PER_ELEMENT = 2.0


def expert_weight_bytes_per_gpu(arch: ModelArch, routed_bytes: float, tp: int, pp: int, ep: int) -> float:
    """Routed-expert bytes on the busiest GPU: ceil(E / ep) whole experts of a pipeline stage's layers, each
    further split tp / ep ways where EP runs inside a wider TP group (SGLang's MoE-TP = TP / EP). Without EP
    (ep = 1) it is `routed_bytes / (tp x pp)`, TP's slice of every expert."""
    if ep <= 1 or not arch.is_moe or arch.num_experts <= 0:
        return routed_bytes / (tp * pp)
    per_expert = routed_bytes / arch.num_experts
    return per_expert * math.ceil(arch.num_experts / ep) / (pp * max(1, tp // ep))


def experts_touched_fraction(arch: ModelArch, tokens_in_pass: Num) -> Num:
    """Expected fraction of a layer's routed experts that `tokens_in_pass` tokens visit, each routing to k
    of E: 1 - (1 - k/E)^n (uniform routing; `performance.read_fraction`). Here, below `performance`, which
    imports it, so that this module's busiest-rank count uses the same figure."""
    k_over_e = arch.experts_per_token / arch.num_experts
    return 1.0 - vec.power(1.0 - k_over_e, vec.maximum(1, tokens_in_pass))


def busiest_rank_experts(arch: ModelArch, tokens: Num, ep: int) -> Num:
    """Expected routed experts a pass of `tokens` tokens touches on the busiest of `ep` ranks, per layer.
    A rank holds n = ceil(E / ep) experts, each touched with probability f = `experts_touched_fraction`
    (uniform routing, as `read_fraction` assumes), so its count has mean n f and standard deviation
    sqrt(n f (1 - f)); the largest of ep such counts is at most the mean + sd x sqrt(2 ln ep) (the expected
    maximum of ep Gaussians, e.g. Kamath 2015, "Bounds on the expectation of the maximum of samples from a
    Gaussian"), capped at n. One token's 8 of 256 experts over 8 ranks: mean 1, busiest ~3; at large
    batches every rank's experts are all touched and the busiest is the mean."""
    n = math.ceil(arch.num_experts / ep)
    f = experts_touched_fraction(arch, tokens)
    mean = n * f
    spread = vec.power(vec.maximum(0.0, n * f * (1.0 - f)), 0.5) * math.sqrt(2.0 * math.log(ep))
    return vec.minimum(float(n), mean + spread)


def expert_parallel_cost(r: ResolvedPlan, cost: PassCost, tokens: Num, sequences: Num) -> tuple[PassCost, Num]:
    """`cost` (a whole pass of `tokens` tokens of `sequences` sequences) as `performance.pass_time`, which
    splits every part by TP, should see it on the busiest GPU of an expert-parallel plan, and the seconds of
    its dispatch / combine all-to-alls. Unchanged (and 0 s) without EP or on a dense model.
    - Routed experts: the busiest rank's touched experts (`busiest_rank_experts`), each split tp / ep ways
      where EP runs inside TP, in place of TP's slice of every touched expert (bytes and FLOPs alike).
    - DP attention (EP > TP): the busiest attention group runs ceil(sequences / dp) of the sequences'
      attention and dense layers (its KV reads and FLOPs; the dense weights are read in full by every group);
      each MoE layer dispatches its tokens' hidden states to their k experts' ranks and combines them back,
      (ep - 1) / ep of it leaving the GPU: 2 x k x hidden x 2 B per token and layer at the link's bandwidth,
      plus the link's latency for each of the two."""
    arch, hw = r.arch, r.plan.hardware
    ep, tp = hw.expert_parallel, hw.tensor_parallel
    if ep <= 1 or not arch.is_moe or arch.num_experts <= 0:
        return cost, 0.0
    touched = arch.num_experts * experts_touched_fraction(arch, tokens)  # what cost.expert_* hold, per layer
    scale = busiest_rank_experts(arch, tokens, ep) / vec.maximum(touched, 1e-12) * tp / max(1, tp // ep)
    expert_bytes = cost.expert_bytes * scale
    expert_flops = cost.expert_flops * scale
    dense_flops = cost.flops - cost.expert_flops
    attn_flops, kv, spill = cost.attn_flops, cost.kv_bytes, cost.spill_bytes
    a2a_s: Num = 0.0
    dp = ep // tp if ep > tp else 1
    if dp > 1:
        seqs = vec.maximum(1, sequences)
        share = vec.ceil_int(seqs / dp) / seqs  # the busiest attention group's sequences
        dense_flops, attn_flops, kv, spill = dense_flops * share, attn_flops * share, kv * share, spill * share
        link = r.link
        if link is not None:
            per_layer = (2 * arch.experts_per_token * arch.hidden_size * A2A_BYTES_PER_ELEMENT
                         * tokens * share * (ep - 1) / ep)
            a2a_s = arch.num_moe_layers / hw.pipeline_parallel * (
                per_layer / (link.bandwidth_gb_s * 1e9) + 2 * link.latency_us * 1e-6)
    return replace(cost, weight_bytes=cost.weight_bytes - cost.expert_bytes + expert_bytes, expert_bytes=expert_bytes,
                   flops=dense_flops + expert_flops, expert_flops=expert_flops, attn_flops=attn_flops, kv_bytes=kv,
                   spill_bytes=spill), a2a_s
