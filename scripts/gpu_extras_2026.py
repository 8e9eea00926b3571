"""Accelerators added for issue 14 (the GPUs people name), read by scripts/build_gpu_catalog.py.

Same conventions as its EXTRAS: dense rates (2:4-sparse headline figures halved), FP32 accumulate
(GeForce FP16/BF16/FP8 at half the FP16-accumulate rate), memory in vendor GB (the build turns it
into the GiB NVML reports), nvlink_gb_s per direction. `verification` says how each figure was
checked; no live vendor page could be opened in the session that added these, so figures read from
secondary copies of vendor tables say which copy, and DERIVED figures give the derivation.

NVIDIA GeForce rates from "AI TOPS" (FP4 with sparsity on Blackwell, FP8 with sparsity on Ada):
Blackwell FP16 (FP32 acc) = AI TOPS / 16, FP8 (FP32 acc) = AI TOPS / 8, FP4 dense = AI TOPS / 2,
INT8 dense = AI TOPS / 4 (RTX 5090: 3352 -> 209.5 / 419 / 1676 / 838, Blackwell whitepaper Table 3);
Ada FP16 (FP32 acc) = AI TOPS / 8, FP8 (FP32 acc) = AI TOPS / 4, INT8 dense = AI TOPS / 2
(RTX 4090: 1321 -> 165.2 / 330.3 / 660.6, Ada whitepaper v2.02).
"""

from __future__ import annotations

from typing import Any

TOMS_CHINA = ("https://www.tomshardware.com/pc-components/gpus/new-nvidia-ai-gpus-designed-to-get-around-us-export-"
              "bans-come-to-china-h20-l20-and-l2-to-fill-void-left-by-restricted-models")
VERDA_GB300 = "https://verda.com/blog/gb300-nvl72-architecture"
GB200_PAGE = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
GB300_PAGE = "https://www.nvidia.com/en-us/data-center/gb300-nvl72/"
AMD_MI355X = "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html"
LAPTOP_40 = "https://www.nvidia.com/en-us/geforce/laptops/compare/"
BW_50 = "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/"
AS_RECALLED = "vendor figures as known to the builder; the vendor page was not re-read in-session"


def _geforce_blackwell(ai_tops: float) -> dict[str, float]:
    """Dense rates of a GeForce Blackwell part from its 'AI TOPS' (FP4 sparse)."""
    return dict(fp16_tflops_dense=round(ai_tops / 16, 1), bf16_tflops_dense=round(ai_tops / 16, 1),
                fp8_tflops_dense=round(ai_tops / 8, 1), int8_tops_dense=round(ai_tops / 4, 1),
                fp4_tflops_dense=round(ai_tops / 2, 1))


def _geforce_ada(ai_tops: float) -> dict[str, float]:
    """Dense rates of a GeForce Ada part from its 'AI TOPS' (FP8 sparse)."""
    return dict(fp16_tflops_dense=round(ai_tops / 8, 1), bf16_tflops_dense=round(ai_tops / 8, 1),
                fp8_tflops_dense=round(ai_tops / 4, 1), int8_tops_dense=round(ai_tops / 2, 1))


EXTRAS_2026: list[dict[str, Any]] = [
    # ---------------------------------------------------------------- NVIDIA datacenter, China SKUs
    dict(
        id="h20-96gb", name="NVIDIA H20", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Hopper (GH100, 78 SMs)", release_year=2024, aliases=["NVIDIA H20", "HGX H20", "H20 96GB"],
        nominal_gb=96, memory_type="HBM3", memory_bandwidth_gb_s=4000, fp32_tflops=44,
        fp16_tflops_dense=148, bf16_tflops_dense=148, fp8_tflops_dense=296, int8_tops_dense=296, tdp_w=400,
        pcie_gen=5, pcie_lanes=16, nvlink="NVLink4, 900 GB/s total", nvlink_gb_s=450.0, form_factor="SXM5 (HGX H20)",
        source=TOMS_CHINA,
        verification="partial (NVIDIA HGX H20 table as listed by a reseller and reproduced by Tom's Hardware, "
        "2024-02; NVIDIA publishes no H20 page in English)",
        notes="China export SKU. Table: 96 GB HBM3, 4.0 TB/s, INT8/FP8 296, BF16/FP16 148, TF32 74 (dense: FP16 = 2x "
        "TF32 as on every Hopper dense row), FP32 44, NVLink 900 GB/s, 400 W. Decode (bandwidth-bound) beats an "
        "H100 SXM; prefill (compute-bound) is ~15 % of it.",
    ),
    dict(
        id="l20", name="NVIDIA L20", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Ada Lovelace (AD102)", release_year=2024, aliases=["NVIDIA L20", "L20 48GB"], ecc=True,
        nominal_gb=48, memory_type="GDDR6 ECC (384-bit)", memory_bandwidth_gb_s=864, fp32_tflops=59.8,
        fp16_tflops_dense=119.5, bf16_tflops_dense=119.5, fp8_tflops_dense=239, int8_tops_dense=239, tdp_w=275,
        pcie_gen=4, pcie_lanes=16, form_factor="2-slot FHFL, passive", slots=2, source=TOMS_CHINA,
        verification="partial (NVIDIA table via reseller listing reproduced by Tom's Hardware, 2024-02)",
        notes="China export SKU of the L40S board. Table: 48 GB GDDR6 ECC, 864 GB/s, INT8/FP8 239, BF16/FP16 119.5, "
        "TF32 59.8 (dense: FP16 = 2x TF32); 275 W.",
    ),
    dict(
        id="a30", name="NVIDIA A30", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Ampere (GA100)", release_year=2021, aliases=["NVIDIA A30", "A30 24GB"],
        nominal_gb=24, memory_type="HBM2 (3072-bit)", memory_bandwidth_gb_s=933, fp32_tflops=10.3,
        fp16_tflops_dense=165, bf16_tflops_dense=165, fp8_tflops_dense=None, int8_tops_dense=330, tdp_w=165,
        pcie_gen=4, pcie_lanes=16, nvlink="2-GPU NVLink bridge (3rd gen), 200 GB/s total", nvlink_gb_s=100.0,
        nvlink_max_gpus=2, form_factor="2-slot FHFL, passive", slots=2,
        source="https://www.nvidia.com/en-us/data-center/products/a30-gpu/",
        verification=f"partial ({AS_RECALLED}; datasheet dense | sparse pairs: TF32 82 | 165*, BF16/FP16 165 | 330*, "
        "INT8 330 | 661*). Cross-checked 2026-11-25 against the TechPowerUp-derived table at "
        "https://sysrqmts.com/en/gpus/compare/nvidia-a30-pcie-vs-nvidia-jetson-tx1-gpu (NVIDIA's page was not "
        "readable in-session): GA100, 56 SMs (3,584 FP32 cores), boost 1,440 MHz (base 930), HBM2 3,072-bit at "
        "1,215 MHz (2.43 Gbps) = 933.1 GB/s, FP32 10.32 TFLOPS, FP64 5.16, 165 W; consistent with the figures "
        "above: 56 SMs x 64 FP32 lanes x 2 x 1.44 GHz = 10.32 TFLOPS, 3,072 bit x 2.43 Gbps / 8 = 933 GB/s)",
        notes="A GA100 with 56 of its SMs enabled (A100: 108), boost 1,440 MHz, 24 GB HBM2 on three stacks "
        "(3,072-bit) at 933 GB/s; added for the ORCA cluster's 4 x A30 llama.cpp layer-split rows "
        "(llamacpp_multigpu.jsonl). SMs x clock (llama.cpp's SM-bound mat-vecs, performance.sm_cycles_per_s) "
        "follows from fp32_tflops and the architecture.",
    ),
    dict(
        id="mi50-32gb", name="AMD Radeon Instinct MI50 32GB", vendor="AMD", hardware_class="amd",
        architecture="GCN 5 / Vega 20 (gfx906)", release_year=2018,
        aliases=["AMD Radeon Instinct MI50", "Radeon Instinct MI50 32GB", "MI50 32GB", "MI50"],
        nominal_gb=32, memory_type="HBM2 (4096-bit)", memory_bandwidth_gb_s=1024, fp32_tflops=13.3,
        fp16_tflops_dense=26.5, bf16_tflops_dense=None, fp8_tflops_dense=None, int8_tops_dense=53.0, tdp_w=300,
        pcie_gen=4, pcie_lanes=16, form_factor="2-slot FHFL, passive", slots=2,
        source="https://www.amd.com/en/support/downloads/drivers.html/accelerators/instinct/instinct-mi-series/instinct-mi50-32gb.html",
        verification=f"partial ({AS_RECALLED}: 60 CUs at 1,725 MHz, 1,024 GB/s HBM2, FP16 26.5 / FP32 13.3 TFLOPS, "
        "INT8 53 TOPS, 300 W; no matrix cores, so FP16 is the packed-math vector rate)",
        notes="Vega 20 (gfx906): no tensor/matrix cores, no BF16 arithmetic; Infinity Fabric Link bridges (not "
        "modelled: links are PCIe here). Added for the 2 x MI50 llama.cpp layer-split rows "
        "(llamacpp_multigpu.jsonl, MI50X2).",
    ),
    dict(
        id="mi100", name="AMD Instinct MI100", vendor="AMD", hardware_class="amd",
        architecture="CDNA (gfx908)", release_year=2020,
        aliases=["AMD Instinct MI100", "Instinct MI100", "MI100", "Instinct MI100 32GB"],
        nominal_gb=32, memory_type="HBM2 (4096-bit)", memory_bandwidth_gb_s=1228.8, fp32_tflops=23.1,
        fp16_tflops_dense=184.6, bf16_tflops_dense=92.3, fp8_tflops_dense=None, int8_tops_dense=184.6, tdp_w=300,
        pcie_gen=4, pcie_lanes=16, form_factor="2-slot FHFL, passive", slots=2,
        source="https://www.amd.com/en/products/accelerators/instinct/mi100.html",
        verification=f"partial ({AS_RECALLED}: 120 CUs at 1,502 MHz peak, 32 GB HBM2 at 1.2288 TB/s, FP32 vector "
        "23.1 TFLOPS, FP16 matrix 184.6, BF16 matrix 92.3, INT8 matrix 184.6 TOPS, 300 W)",
        notes="First CDNA part (gfx908): matrix cores (MFMA) for FP16 / BF16 / INT8, no FP8, BF16 at half the FP16 "
        "rate. Added for llama.cpp PR #28576's MI100 rows (calibration/llamacpp_hip_pr_tables.jsonl, LCPPHIPPR).",
    ),
    dict(
        id="rx-6800", name="AMD Radeon RX 6800", vendor="AMD", hardware_class="amd",
        architecture="RDNA 2 (Navi 21, gfx1030)", release_year=2020,
        aliases=["AMD Radeon RX 6800", "Radeon RX 6800", "RX 6800", "Radeon RX 6800 16GB"],
        nominal_gb=16, memory_type="GDDR6 (16 Gbps, 256-bit)", memory_bandwidth_gb_s=512, fp32_tflops=16.17,
        fp16_tflops_dense=32.33, bf16_tflops_dense=None, fp8_tflops_dense=None, int8_tops_dense=None, tdp_w=250,
        pcie_gen=4, pcie_lanes=16, form_factor="2.5-slot (reference)", slots=2.5, launch_price_usd=579,
        source="https://www.amd.com/en/products/graphics/amd-radeon-rx-6800",
        verification=f"partial ({AS_RECALLED}: 60 CUs, 2,105 MHz boost, 16 GB GDDR6 at 16 Gbps on 256 bits = "
        "512 GB/s, 128 MB Infinity Cache, FP32 16.17 / FP16 32.33 TFLOPS (packed math), 250 W board power, $579)",
        notes="RDNA 2: no matrix / WMMA units, no BF16 arithmetic; wave32. Added for llama.cpp PR #13014's RX 6800 "
        "rows (calibration/llamacpp_hip_pr_tables.jsonl, LCPPHIPPR).",
    ),
    dict(
        id="l2", name="NVIDIA L2", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Ada Lovelace (AD104)", release_year=2024, aliases=["NVIDIA L2", "L2 24GB"], ecc=True,
        nominal_gb=24, memory_type="GDDR6 ECC (192-bit)", memory_bandwidth_gb_s=300, fp32_tflops=24.1,
        fp16_tflops_dense=96.5, bf16_tflops_dense=96.5, fp8_tflops_dense=193, int8_tops_dense=193, tdp_w=120,
        pcie_gen=4, pcie_lanes=16, form_factor="1-slot low profile, passive", slots=1, source=TOMS_CHINA,
        verification="partial (NVIDIA table via reseller listing reproduced by Tom's Hardware, 2024-02)",
        notes="China export SKU of the L4 class. Table: 24 GB GDDR6 ECC, 300 GB/s, INT8/FP8 193, BF16/FP16 96.5, "
        "TF32 48.3.",
    ),
    dict(
        id="h800-sxm-80gb", name="NVIDIA H800 SXM5 80GB", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Hopper (GH100)", release_year=2023, aliases=["NVIDIA H800", "H800 SXM", "H800 80GB HBM3"],
        nominal_gb=80, memory_type="HBM3 (5120-bit)", memory_bandwidth_gb_s=3350, fp32_tflops=67,
        fp16_tflops_dense=989.4, bf16_tflops_dense=989.4, fp8_tflops_dense=1978.9, int8_tops_dense=1978.9,
        tdp_w=700, pcie_gen=5, pcie_lanes=16, nvlink="NVLink4 cut to 400 GB/s total", nvlink_gb_s=200.0,
        form_factor="SXM5 module", source="https://www.nvidia.cn/data-center/h800/",
        verification=f"partial ({AS_RECALLED}; compute and memory identical to H100 SXM, only NVLink and FP64 cut)",
        notes="China export SKU of the H100 SXM: same SMs, HBM3 and tensor rates; NVLink 400 GB/s total (vs 900); "
        "FP64 cut to ~1 TFLOPS. DeepSeek-V3 was trained on these.",
    ),
    dict(
        id="h800-pcie-80gb", name="NVIDIA H800 PCIe 80GB", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Hopper (GH100)", release_year=2023, aliases=["NVIDIA H800 PCIe", "H800 PCIe"],
        nominal_gb=80, memory_type="HBM2e (5120-bit)", memory_bandwidth_gb_s=2000, fp32_tflops=51,
        fp16_tflops_dense=756.5, bf16_tflops_dense=756.5, fp8_tflops_dense=1513, int8_tops_dense=1513, tdp_w=350,
        pcie_gen=5, pcie_lanes=16, nvlink="2-GPU NVLink bridge, 400 GB/s total", nvlink_gb_s=200.0,
        nvlink_max_gpus=2, form_factor="2-slot FHFL, passive", slots=2, source="https://www.nvidia.cn/data-center/h800/",
        verification=f"partial ({AS_RECALLED}; same as H100 PCIe except the NVLink bridge rate)",
        notes="China export SKU of the H100 PCIe; bridge NVLink 400 GB/s total for a pair.",
    ),
    dict(
        id="a800-sxm-80gb", name="NVIDIA A800 SXM4 80GB", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Ampere (GA100)", release_year=2022, aliases=["NVIDIA A800-SXM4-80GB", "A800 SXM 80GB", "A800"],
        nominal_gb=80, memory_type="HBM2e (5120-bit)", memory_bandwidth_gb_s=2039, fp32_tflops=19.5,
        fp16_tflops_dense=312, bf16_tflops_dense=312, int8_tops_dense=624, tdp_w=400, pcie_gen=4, pcie_lanes=16,
        nvlink="NVLink3 cut to 400 GB/s total", nvlink_gb_s=200.0, form_factor="SXM4 module",
        source="https://www.nvidia.cn/data-center/a800/",
        verification=f"partial ({AS_RECALLED}; identical to A100 80GB SXM except NVLink)",
        notes="China export SKU of the A100 80GB SXM: NVLink 400 GB/s total (vs 600), everything else as A100.",
    ),
    dict(
        id="a800-pcie-80gb", name="NVIDIA A800 80GB PCIe", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Ampere (GA100)", release_year=2022, aliases=["NVIDIA A800 80GB PCIe", "A800 PCIe 80GB"],
        nominal_gb=80, memory_type="HBM2e (5120-bit)", memory_bandwidth_gb_s=1935, fp32_tflops=19.5,
        fp16_tflops_dense=312, bf16_tflops_dense=312, int8_tops_dense=624, tdp_w=300, pcie_gen=4, pcie_lanes=16,
        nvlink="2-GPU NVLink bridge, 400 GB/s total", nvlink_gb_s=200.0, nvlink_max_gpus=2,
        form_factor="2-slot FHFL, passive", slots=2, source="https://www.nvidia.cn/data-center/a800/",
        verification=f"partial ({AS_RECALLED}; A100 80GB PCIe figures with a 400 GB/s bridge)",
        notes="China export SKU of the A100 80GB PCIe.",
    ),
    # ---------------------------------------------------------------- NVIDIA Blackwell datacenter
    dict(
        id="gb200-186gb", name="NVIDIA GB200 (per Blackwell GPU)", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Blackwell (GB100, sm_100)", release_year=2024,
        aliases=["GB200", "NVIDIA GB200", "GB200 NVL72", "B200 186GB"],
        nominal_gb=186, memory_type="HBM3e (8 stacks)", memory_bandwidth_gb_s=8000, fp32_tflops=80,
        fp16_tflops_dense=2500, bf16_tflops_dense=2500, fp8_tflops_dense=5000, int8_tops_dense=5000,
        fp4_tflops_dense=10000, tdp_w=1200, pcie_gen=6, nvlink="NVLink5, 1.8 TB/s total (NVL72 domain)",
        nvlink_gb_s=900.0, form_factor="Grace Blackwell superchip (1 Grace + 2 GPUs)", source=GB200_PAGE,
        verification="partial (NVIDIA GB200 NVL72 rack figures / 72, sparse halved: FP16 360 PF sparse, FP8 720 PF "
        "sparse, FP4 1,440 PF sparse, 13.4 TB HBM3e at 576 TB/s; reference-table B200 row notes agree: 186 GB, "
        "8 TB/s, up to 1,200 W, FP16 2,500 dense)",
        notes="Per GPU of a GB200 superchip (each superchip = 1 Grace CPU + 2 GPUs). Datacenter Blackwell (sm_100).",
    ),
    dict(
        id="b300-270gb", name="NVIDIA B300 (HGX B300)", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Blackwell Ultra (sm_103)", release_year=2025,
        aliases=["NVIDIA B300", "B300 SXM", "HGX B300", "Blackwell Ultra"],
        nominal_gb=270, memory_type="HBM3e (8 stacks, 12-high; 288 GB physical)", memory_bandwidth_gb_s=7700,
        fp32_tflops=75, fp16_tflops_dense=2250, bf16_tflops_dense=2250, fp8_tflops_dense=4500,
        int8_tops_dense=150, fp4_tflops_dense=14000, tdp_w=1100, pcie_gen=6,
        nvlink="NVLink5, 1.8 TB/s total", nvlink_gb_s=900.0, form_factor="SXM (HGX B300 8-GPU board)",
        source=f"https://www.nvidia.com/en-us/data-center/hgx/ ; {VERDA_GB300}",
        verification="partial (NVIDIA per-GPU table without sparsity as reproduced by Verda, 2025; "
        "glennklockwood.com B300 notes agree on FP16 2,250 dense and 288 GB physical)",
        notes="Blackwell Ultra: dense FP4 14 PF (vs 9 on B200), FP16/FP8 as B200, INT8 and FP64 cut to a trickle "
        "(0.15 POPS INT8). 288 GB physical HBM3e, 270 GB usable per NVIDIA's HGX figures.",
    ),
    dict(
        id="gb300-279gb", name="NVIDIA GB300 (per Blackwell Ultra GPU)", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Blackwell Ultra (sm_103)", release_year=2025, aliases=["GB300", "NVIDIA GB300", "GB300 NVL72"],
        nominal_gb=279, memory_type="HBM3e (8 stacks, 12-high; 288 GB physical)", memory_bandwidth_gb_s=8000,
        fp32_tflops=80, fp16_tflops_dense=2500, bf16_tflops_dense=2500, fp8_tflops_dense=5000,
        int8_tops_dense=165, fp4_tflops_dense=15000, tdp_w=1400, pcie_gen=6,
        nvlink="NVLink5, 1.8 TB/s total (NVL72 domain)", nvlink_gb_s=900.0,
        form_factor="Grace Blackwell Ultra superchip", source=f"{GB300_PAGE} ; {VERDA_GB300}",
        verification="partial (NVIDIA per-GPU table without sparsity as reproduced by Verda, 2025; GB300 NVL72 "
        "'1.1 EF dense FP4' / 72 = 15 PF agrees)",
        notes="Per GPU of a GB300 NVL72 rack.",
    ),
    # ---------------------------------------------------------------- RTX PRO 6000 variants
    dict(
        id="rtx-pro-6000-blackwell-server", name="NVIDIA RTX PRO 6000 Blackwell Server Edition", vendor="NVIDIA",
        hardware_class="workstation", architecture="Blackwell (GB202)", release_year=2025,
        aliases=["NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Server",
                 "RTX PRO 6000 Blackwell Server"],
        nominal_gb=96, memory_type="GDDR7 ECC (512-bit)", memory_bandwidth_gb_s=1597, fp32_tflops=120,
        fp16_tflops_dense=503.8, bf16_tflops_dense=503.8, fp8_tflops_dense=1007.6, fp4_tflops_dense=2015,
        tdp_w=600, pcie_gen=5, pcie_lanes=16, form_factor="2-slot FHFL, passive", slots=2,
        source="https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/",
        verification=f"partial ({AS_RECALLED}: 96 GB GDDR7 ECC, 1.6 TB/s, 400-600 W configurable; tensor rates "
        "taken equal to the Workstation Edition's (same 188 SMs) - DERIVED, at 600 W)",
        notes="Passive server card of the same GB202 die (188 SMs) as the Workstation Edition; full-rate FP32 "
        "accumulate like every RTX PRO part. Lower power limits lower the clocks.",
    ),
    dict(
        id="rtx-pro-6000-blackwell-maxq", name="NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        vendor="NVIDIA", hardware_class="workstation", architecture="Blackwell (GB202)", release_year=2025,
        aliases=["NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX PRO 6000 Max-Q"],
        nominal_gb=96, memory_type="GDDR7 ECC (28 Gbps, 512-bit)", memory_bandwidth_gb_s=1792,
        fp16_tflops_dense=438.9, bf16_tflops_dense=438.9, fp8_tflops_dense=877.8, fp4_tflops_dense=1755.5,
        tdp_w=300, pcie_gen=5, pcie_lanes=16, form_factor="2-slot, blower", slots=2,
        source="https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000-max-q/",
        verification="derived (NVIDIA '3,511 AI TOPS' = FP4 sparse; FP16 dense = AI TOPS / 8 as for the "
        "Workstation Edition: 4,000 -> 503.8, RTX Blackwell PRO whitepaper); Fixstars blog (2025-09) quotes the "
        "same datasheet",
        notes="300 W version of the RTX PRO 6000 (same memory, lower clocks).",
    ),
    # ---------------------------------------------------------------- AMD
    dict(
        id="mi355x", name="AMD Instinct MI355X", vendor="AMD", hardware_class="amd", architecture="CDNA 4",
        release_year=2025, aliases=["AMD Instinct MI355X", "MI355X", "MI355"], nominal_gb=288,
        memory_type="HBM3E (8 stacks)", memory_bandwidth_gb_s=8000, fp32_tflops=157.3,
        fp16_tflops_dense=2516.6, bf16_tflops_dense=2516.6, fp8_tflops_dense=5033.2, int8_tops_dense=5033.2,
        fp4_tflops_dense=10066.3, tdp_w=1400, pcie_gen=5, pcie_lanes=16,
        nvlink="Infinity Fabric, 7 links x 153.6 GB/s = 1,075 GB/s aggregate (bidirectional)", nvlink_gb_s=537.6,
        form_factor="OAM module, liquid cooled", source=AMD_MI355X,
        verification="partial (AMD spec page figures as known to the builder; cross-checks read in-session: "
        "ISSCC 2026 report 'FP8 5 PF' = 256 CUs x 8,192 FLOP/clk x 2.4 GHz; Tom's Hardware 'FP4 20.1 PF' (sparse) "
        "-> 10.05 dense; 288 GB, 8 TB/s, 1,400 W in every report)",
        notes="AMD prints dense and sparse; these are dense. MI350X: same memory, 1,000 W, ~8 % lower clocks.",
    ),
    dict(
        id="rx-7900-xt", name="AMD Radeon RX 7900 XT", vendor="AMD", hardware_class="amd",
        architecture="RDNA 3 (Navi 31)", release_year=2022, aliases=["AMD Radeon RX 7900 XT", "Radeon RX 7900 XT"],
        nominal_gb=20, memory_type="GDDR6 (20 Gbps, 320-bit)", memory_bandwidth_gb_s=800, fp32_tflops=51.6,
        fp16_tflops_dense=103.2, tdp_w=315, pcie_gen=4, pcie_lanes=16, launch_price_usd=899,
        source="https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xt.html",
        verification=f"partial ({AS_RECALLED}: 84 CUs, 2.4 GHz boost, 51.6 TFLOPS FP32 (dual issue), 103 TFLOPS "
        "FP16; same per-CU basis as the RX 7900 XTX row: 61.4 / 122.8 at 96 CUs x 2.5 GHz)",
        notes="FP16 is the WMMA rate (AMD's 'peak half precision'); RDNA 3 has no FP8. Same basis as RX 7900 XTX.",
    ),
    dict(
        id="ryzen-ai-max-395", name="AMD Ryzen AI Max+ 395 (Radeon 8060S, 128GB)", vendor="AMD",
        hardware_class="amd", architecture="RDNA 3.5 (Strix Halo, 40 CUs) + 16 Zen 5 cores", release_year=2025,
        aliases=["Ryzen AI Max+ 395", "Ryzen AI Max 395", "Strix Halo", "Radeon 8060S", "Framework Desktop",
                 "AMD Ryzen AI Max+ 395 w/ Radeon 8060S"],
        nominal_gb=128, memory_gib=128.0, usable_memory_gib=96.0, memory_type="LPDDR5X-8000 (256-bit, unified)",
        memory_bandwidth_gb_s=256, fp32_tflops=29.7, fp16_tflops_dense=59.4, tdp_w=120,
        form_factor="APU (mini PCs, laptops)",
        source="https://www.amd.com/en/products/processors/laptop/ryzen/ai-max-series/amd-ryzen-ai-max-plus-395.html",
        verification="derived (memory: AMD spec - LPDDR5X-8000 on a 256-bit bus = 256 GB/s, up to 128 GB; GPU "
        "rates DERIVED: 40 CUs x 2.9 GHz x 512 FP16 FLOP/clk/CU (WMMA, RDNA 3 per-CU rate of the RX 7900 XTX row) "
        "= 59.4 TFLOPS, FP32 dual-issue 29.7)",
        notes="Unified memory: AMD Variable Graphics Memory gives the GPU up to 96 GB of a 128 GB machine on "
        "Windows (usable_memory_gib); Linux (GTT / amdgpu.gttsize) can give it more. Plan on the memory bandwidth: "
        "decode is bound by it as on Apple silicon.",
    ),
    # ---------------------------------------------------------------- GeForce RTX 40 / 50 desktop
    dict(
        id="rtx-4060", name="NVIDIA GeForce RTX 4060", vendor="NVIDIA", hardware_class="geforce",
        architecture="Ada Lovelace (AD107)", release_year=2023, aliases=["NVIDIA GeForce RTX 4060"],
        nominal_gb=8, memory_type="GDDR6 (17 Gbps, 128-bit)", memory_bandwidth_gb_s=272, fp32_tflops=15.1,
        **_geforce_ada(242), tdp_w=115, pcie_gen=4, pcie_lanes=8, launch_price_usd=299,
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4060-4060ti/",
        verification="derived (NVIDIA '242 AI TOPS' (FP8 sparse) with the Ada ratios in this module's docstring; "
        "= 24 SMs x 1,024 FP16 FLOP/clk x 2.46 GHz / 2)",
        notes="PCIe 4.0 x8. GeForce: FP16/BF16/FP8 with FP32 accumulate at half the FP16-accumulate rate.",
    ),
    dict(
        id="rtx-4060-ti-8gb", name="NVIDIA GeForce RTX 4060 Ti 8GB", vendor="NVIDIA", hardware_class="geforce",
        architecture="Ada Lovelace (AD106)", release_year=2023, aliases=[],
        nominal_gb=8, memory_type="GDDR6 (18 Gbps, 128-bit)", memory_bandwidth_gb_s=288, fp32_tflops=22.06,
        **_geforce_ada(353), tdp_w=160, pcie_gen=4, pcie_lanes=8, launch_price_usd=399,
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4060-4060ti/",
        verification="derived (NVIDIA '353 AI TOPS', as the 16 GB card; 160 W and $399 from the same NVIDIA "
        "page's 8 GB column, as scripts/data/accelerators_reference.csv notes)",
        notes="Same chip and clocks as the 16 GB card; half the memory. PCIe 4.0 x8. NVML names both "
        "'NVIDIA GeForce RTX 4060 Ti'. GeForce: FP16/BF16/FP8 with FP32 accumulate at half the FP16-accumulate rate.",
    ),
    dict(
        id="rtx-5060", name="NVIDIA GeForce RTX 5060", vendor="NVIDIA", hardware_class="geforce",
        architecture="Blackwell (GB206)", release_year=2025, aliases=["NVIDIA GeForce RTX 5060"],
        nominal_gb=8, memory_type="GDDR7 (28 Gbps, 128-bit)", memory_bandwidth_gb_s=448, fp32_tflops=19.2,
        **_geforce_blackwell(614), tdp_w=145, pcie_gen=5, pcie_lanes=8, launch_price_usd=299, source=BW_50,
        verification="derived (NVIDIA '614 AI TOPS' (FP4 sparse) with the Blackwell ratios in this module's "
        "docstring; = 30 SMs x 512 FLOP/clk x 2.5 GHz)",
        notes="PCIe 5.0 x8.",
    ),
    dict(
        id="rtx-5060-ti-8gb", name="NVIDIA GeForce RTX 5060 Ti 8GB", vendor="NVIDIA", hardware_class="geforce",
        architecture="Blackwell (GB206)", release_year=2025, aliases=[],
        nominal_gb=8, memory_type="GDDR7 (28 Gbps, 128-bit)", memory_bandwidth_gb_s=448, fp32_tflops=23.7,
        **_geforce_blackwell(759), tdp_w=180, pcie_gen=5, pcie_lanes=8, launch_price_usd=379, source=BW_50,
        verification="derived (NVIDIA '759 AI TOPS', as the 16 GB card)",
        notes="Same chip and clocks as the 16 GB card; half the memory. NVML names both 'NVIDIA GeForce RTX 5060 Ti'.",
    ),
    dict(
        id="rtx-5070", name="NVIDIA GeForce RTX 5070", vendor="NVIDIA", hardware_class="geforce",
        architecture="Blackwell (GB205)", release_year=2025, aliases=["NVIDIA GeForce RTX 5070"],
        nominal_gb=12, memory_type="GDDR7 (28 Gbps, 192-bit)", memory_bandwidth_gb_s=672, fp32_tflops=30.9,
        **_geforce_blackwell(988), tdp_w=250, pcie_gen=5, pcie_lanes=16, launch_price_usd=549, source=BW_50,
        verification="derived (NVIDIA '988 AI TOPS' (FP4 sparse) with the Blackwell ratios; = 48 SMs x 512 x 2.51 GHz)",
        notes="",
    ),
    # ---------------------------------------------------------------- GeForce laptop GPUs
    dict(
        id="rtx-3060-laptop", name="NVIDIA GeForce RTX 3060 Laptop GPU", vendor="NVIDIA", hardware_class="geforce",
        architecture="Ampere (GA106)", release_year=2021,
        aliases=["NVIDIA GeForce RTX 3060 Laptop GPU", "RTX 3060 Laptop", "RTX 3060 Mobile"],
        nominal_gb=6, memory_type="GDDR6 (14 Gbps, 192-bit)", memory_bandwidth_gb_s=336, fp32_tflops=13.1,
        fp16_tflops_dense=26.2, bf16_tflops_dense=26.2, int8_tops_dense=104.6, tdp_w=130, pcie_gen=4, pcie_lanes=16,
        form_factor="laptop (80-130 W TGP set by the maker)", source=LAPTOP_40.replace("compare/", "30-series/"),
        verification="derived (30 SMs x 512 FP16 FLOP/clk (GeForce Ampere FP32-acc, = RTX 3090's 71 TFLOPS / 82 SMs "
        "/ 1.695 GHz) x 1.703 GHz top boost; boost depends on the laptop's power limit)",
        notes="Laptop figures are at the highest boost NVIDIA lists; thin laptops run lower TGP and clocks.",
    ),
    dict(
        id="rtx-4060-laptop", name="NVIDIA GeForce RTX 4060 Laptop GPU", vendor="NVIDIA", hardware_class="geforce",
        architecture="Ada Lovelace (AD107)", release_year=2023,
        aliases=["NVIDIA GeForce RTX 4060 Laptop GPU", "RTX 4060 Laptop", "RTX 4060 Mobile"],
        nominal_gb=8, memory_type="GDDR6 (16 Gbps, 128-bit)", memory_bandwidth_gb_s=256, **_geforce_ada(233),
        tdp_w=140, pcie_gen=4, pcie_lanes=8, form_factor="laptop (35-115 W TGP + Dynamic Boost)", source=LAPTOP_40,
        verification="derived (NVIDIA '233 AI TOPS' (FP8 sparse, top boost) with the Ada ratios)",
        notes="Laptop figures are at the highest boost NVIDIA lists; thin laptops run lower TGP and clocks.",
    ),
    dict(
        id="rtx-4070-laptop", name="NVIDIA GeForce RTX 4070 Laptop GPU", vendor="NVIDIA", hardware_class="geforce",
        architecture="Ada Lovelace (AD106)", release_year=2023,
        aliases=["NVIDIA GeForce RTX 4070 Laptop GPU", "RTX 4070 Laptop", "RTX 4070 Mobile"],
        nominal_gb=8, memory_type="GDDR6 (16 Gbps, 128-bit)", memory_bandwidth_gb_s=256, **_geforce_ada(321),
        tdp_w=140, pcie_gen=4, pcie_lanes=8, form_factor="laptop (35-115 W TGP + Dynamic Boost)", source=LAPTOP_40,
        verification="derived (NVIDIA '321 AI TOPS' (FP8 sparse, top boost) with the Ada ratios)",
        notes="Laptop figures are at the highest boost NVIDIA lists.",
    ),
    dict(
        id="rtx-4080-laptop", name="NVIDIA GeForce RTX 4080 Laptop GPU", vendor="NVIDIA", hardware_class="geforce",
        architecture="Ada Lovelace (AD104)", release_year=2023,
        aliases=["NVIDIA GeForce RTX 4080 Laptop GPU", "RTX 4080 Laptop", "RTX 4080 Mobile"],
        nominal_gb=12, memory_type="GDDR6 (18 Gbps, 192-bit)", memory_bandwidth_gb_s=432, **_geforce_ada(542),
        tdp_w=175, pcie_gen=4, pcie_lanes=16, form_factor="laptop (60-150 W TGP + Dynamic Boost)", source=LAPTOP_40,
        verification="derived (NVIDIA '542 AI TOPS' (FP8 sparse, top boost) with the Ada ratios)",
        notes="Laptop figures are at the highest boost NVIDIA lists.",
    ),
    dict(
        id="rtx-4090-laptop", name="NVIDIA GeForce RTX 4090 Laptop GPU", vendor="NVIDIA", hardware_class="geforce",
        architecture="Ada Lovelace (AD103)", release_year=2023,
        aliases=["NVIDIA GeForce RTX 4090 Laptop GPU", "RTX 4090 Laptop", "RTX 4090 Mobile"],
        nominal_gb=16, memory_type="GDDR6 (18 Gbps, 256-bit)", memory_bandwidth_gb_s=576, fp32_tflops=39.7,
        **_geforce_ada(686), tdp_w=175, pcie_gen=4, pcie_lanes=16,
        form_factor="laptop (80-150 W TGP + Dynamic Boost)", source=LAPTOP_40,
        verification="derived (NVIDIA '686 AI TOPS' (FP8 sparse, top boost) with the Ada ratios; = 76 SMs x 1,024 "
        "x 2.04 GHz / 2 (FP32 accumulate))",
        notes="An AD103 (RTX 4080-class die) with 16 GB: not a desktop 4090. Laptop figures at the top boost.",
    ),
    dict(
        id="rtx-5070-ti-laptop", name="NVIDIA GeForce RTX 5070 Ti Laptop GPU", vendor="NVIDIA",
        hardware_class="geforce", architecture="Blackwell (GB205)", release_year=2025,
        aliases=["NVIDIA GeForce RTX 5070 Ti Laptop GPU", "RTX 5070 Ti Laptop", "RTX 5070 Ti Mobile"],
        nominal_gb=12, memory_type="GDDR7 (28 Gbps, 192-bit)", memory_bandwidth_gb_s=672, **_geforce_blackwell(992),
        tdp_w=140, pcie_gen=5, pcie_lanes=8, form_factor="laptop (60-115 W TGP + Dynamic Boost)",
        source="https://www.nvidia.com/en-us/geforce/laptops/50-series/",
        verification="derived (NVIDIA '992 AI TOPS' (FP4 sparse, top boost) with the Blackwell ratios)",
        notes="Laptop figures are at the highest boost NVIDIA lists.",
    ),
    dict(
        id="rtx-5080-laptop", name="NVIDIA GeForce RTX 5080 Laptop GPU", vendor="NVIDIA", hardware_class="geforce",
        architecture="Blackwell (GB203)", release_year=2025,
        aliases=["NVIDIA GeForce RTX 5080 Laptop GPU", "RTX 5080 Laptop", "RTX 5080 Mobile"],
        nominal_gb=16, memory_type="GDDR7 (28 Gbps, 256-bit)", memory_bandwidth_gb_s=896, **_geforce_blackwell(1334),
        tdp_w=175, pcie_gen=5, pcie_lanes=16, form_factor="laptop (80-150 W TGP + Dynamic Boost)",
        source="https://www.nvidia.com/en-us/geforce/laptops/50-series/",
        verification="derived (NVIDIA '1,334 AI TOPS' (FP4 sparse, top boost) with the Blackwell ratios)",
        notes="Laptop figures are at the highest boost NVIDIA lists.",
    ),
    dict(
        id="rtx-5090-laptop", name="NVIDIA GeForce RTX 5090 Laptop GPU", vendor="NVIDIA", hardware_class="geforce",
        architecture="Blackwell (GB203)", release_year=2025,
        aliases=["NVIDIA GeForce RTX 5090 Laptop GPU", "RTX 5090 Laptop", "RTX 5090 Mobile"],
        nominal_gb=24, memory_type="GDDR7 (28 Gbps, 256-bit)", memory_bandwidth_gb_s=896, **_geforce_blackwell(1824),
        tdp_w=175, pcie_gen=5, pcie_lanes=16, form_factor="laptop (95-150 W TGP + Dynamic Boost)",
        source="https://www.nvidia.com/en-us/geforce/laptops/50-series/",
        verification="derived (NVIDIA '1,824 AI TOPS' (FP4 sparse, top boost) with the Blackwell ratios)",
        notes="A GB203 (RTX 5080-class die) with 24 GB; laptop figures at the top boost.",
    ),
    # ---------------------------------------------------------------- Jetson
    dict(
        id="jetson-agx-thor", name="NVIDIA Jetson AGX Thor (T5000, 128GB)", vendor="NVIDIA", hardware_class="other",
        architecture="Blackwell (sm_110) SoC + 14-core Arm Neoverse-V3AE", release_year=2025,
        aliases=["Jetson AGX Thor", "Jetson Thor", "Thor", "NVIDIA Jetson AGX Thor Developer Kit"],
        nominal_gb=128, memory_gib=128.0, memory_type="LPDDR5X (256-bit, unified)", memory_bandwidth_gb_s=273,
        fp16_tflops_dense=258.8, bf16_tflops_dense=258.8, fp8_tflops_dense=517.5, fp4_tflops_dense=1035,
        tdp_w=130, form_factor="module / developer kit",
        source="https://www.nvidia.com/en-us/autonomous-machines/embedded-systems/jetson-thor/",
        verification=f"derived ({AS_RECALLED}: 128 GB LPDDR5X at 273 GB/s, 40-130 W, '2,070 FP4 TFLOPS' with "
        "sparsity; dense FP4 = 1,035, FP8 and FP16 at the datacenter-Blackwell ratios 1/2 and 1/4 (B200: 9,000 / "
        "4,500 / 2,250) - DERIVED, not an NVIDIA figure)",
        notes="Unified memory shared with the CPU and OS. Tensor rates derived from the FP4 headline; treat "
        "prefill estimates as optimistic until measured.",
    ),
    dict(
        id="jetson-orin-nano-super-8gb", name="NVIDIA Jetson Orin Nano Super (8GB)", vendor="NVIDIA",
        hardware_class="other", architecture="Ampere (GA10B, 8 SMs) SoC + 6-core Arm A78AE", release_year=2024,
        aliases=["Jetson Orin Nano Super", "Jetson Orin Nano 8GB", "Orin Nano"],
        nominal_gb=8, memory_gib=8.0, memory_type="LPDDR5 (128-bit, unified)", memory_bandwidth_gb_s=102,
        fp32_tflops=2.1, fp16_tflops_dense=16.75, bf16_tflops_dense=16.75, int8_tops_dense=33.5, tdp_w=25,
        form_factor="module / developer kit", launch_price_usd=249,
        source="https://www.nvidia.com/en-us/autonomous-machines/embedded-systems/jetson-orin/nano-super-developer-kit/",
        verification=f"partial ({AS_RECALLED}: 8 GB LPDDR5 at 102 GB/s, '67 TOPS' INT8 with sparsity (GPU only on "
        "Nano: no DLA) -> 33.5 dense; FP32 = 1,024 CUDA cores x 2 x 1.02 GHz)",
        notes="FP16/BF16 dense DERIVED = 33.5 dense INT8 TOPS / 2 = 16.75 TFLOPS, as for the Jetson AGX Orin (Ampere "
        "tensor cores run FP16 at half their INT8 rate; cross-check: 8 SM x 2,048 FLOP/clk x 1.02 GHz = 16.7); "
        "NVIDIA publishes no FP16 tensor figure for it.",
    ),
    # ---------------------------------------------------------------- Google TPUs
    dict(
        id="tpu-v4", name="Google Cloud TPU v4 (per chip)", vendor="Google", hardware_class="tpu",
        architecture="TPU v4 (2 TensorCores)", release_year=2021, aliases=["TPU v4", "TPUv4", "v4"],
        nominal_gb=32, memory_gib=32.0, memory_type="HBM2", memory_bandwidth_gb_s=1200,
        bf16_tflops_dense=275, fp16_tflops_dense=None, int8_tops_dense=275,
        nvlink="ICI, 6 links (3D torus)", form_factor="Cloud TPU pod slice (4 chips per host)",
        source="https://cloud.google.com/tpu/docs/v4",
        verification=f"partial ({AS_RECALLED}: Cloud TPU v4 system architecture page - 32 GiB HBM2, 1,200 GB/s, "
        "275 peak BF16 TFLOPS and INT8 TOPS per chip)",
        notes="Per chip. TPUs run BF16 (no FP16 matrix path); serve with vLLM-TPU or JetStream.",
    ),
    dict(
        id="tpu-v5e", name="Google Cloud TPU v5e (per chip)", vendor="Google", hardware_class="tpu",
        architecture="TPU v5e (1 TensorCore)", release_year=2023, aliases=["TPU v5e", "TPUv5e", "v5e", "v5litepod"],
        nominal_gb=16, memory_gib=16.0, memory_type="HBM2", memory_bandwidth_gb_s=819, bf16_tflops_dense=197,
        int8_tops_dense=394, nvlink="ICI, 4 links (2D torus), 1,600 Gbps", form_factor="Cloud TPU slice",
        source="https://cloud.google.com/tpu/docs/v5e",
        verification=f"partial ({AS_RECALLED}: Cloud TPU v5e page - 16 GiB HBM2 at 819 GB/s, 197 BF16 TFLOPS, "
        "394 INT8 TOPS per chip)",
        notes="Per chip; the inference-oriented TPU of 2023-24.",
    ),
    dict(
        id="tpu-v5p", name="Google Cloud TPU v5p (per chip)", vendor="Google", hardware_class="tpu",
        architecture="TPU v5p (2 TensorCores)", release_year=2023, aliases=["TPU v5p", "TPUv5p", "v5p"],
        nominal_gb=95, memory_gib=95.0, memory_type="HBM2e", memory_bandwidth_gb_s=2765, bf16_tflops_dense=459,
        int8_tops_dense=918, nvlink="ICI, 6 links (3D torus), 4,800 Gbps", form_factor="Cloud TPU pod slice",
        source="https://cloud.google.com/tpu/docs/v5p",
        verification=f"partial ({AS_RECALLED}: Cloud TPU v5p page - 95 GiB HBM2e at 2,765 GB/s, 459 BF16 TFLOPS, "
        "918 INT8 TOPS per chip)",
        notes="Per chip.",
    ),
    dict(
        id="tpu-v6e", name="Google Cloud TPU v6e Trillium (per chip)", vendor="Google", hardware_class="tpu",
        architecture="TPU v6e (Trillium)", release_year=2024, aliases=["TPU v6e", "Trillium", "v6e"],
        nominal_gb=32, memory_gib=32.0, memory_type="HBM", memory_bandwidth_gb_s=1640, bf16_tflops_dense=918,
        int8_tops_dense=1836, nvlink="ICI, 3,584 Gbps per chip", form_factor="Cloud TPU slice",
        source="https://cloud.google.com/tpu/docs/v6e",
        verification=f"partial ({AS_RECALLED}: Cloud TPU v6e page - 32 GB HBM at 1,640 GB/s, 918 BF16 TFLOPS, "
        "1,836 INT8 TOPS per chip)",
        notes="Per chip.",
    ),
    # ---------------------------------------------------------------- CPU-only hosts
    dict(
        id="cpu-ddr5-2ch", name="CPU only: desktop, 2-channel DDR5-5600, 16 cores (e.g. Ryzen 9 9950X)",
        vendor="AMD", hardware_class="cpu", architecture="Zen 5 (AVX-512, 512-bit datapath)", release_year=2024,
        aliases=["CPU only desktop", "desktop CPU", "Ryzen 9 9950X", "AMD Ryzen 9 9950X", "DDR5 desktop"],
        nominal_gb=64, memory_gib=64.0, memory_type="DDR5-5600 (2 channels, host RAM)", memory_bandwidth_gb_s=89.6,
        fp32_tflops=4.4, cpu_cores=16, tdp_w=170,
        source="https://www.amd.com/en/products/processors/desktops/ryzen/9000-series/amd-ryzen-9-9950x.html",
        verification="derived (AMD spec: 16 cores, 4.3 GHz base, DDR5-5600 2 channels; bandwidth = 2 x 8 B x "
        "5,600 MT/s = 89.6 GB/s; FP32 = 16 cores x 64 FLOP/clk (2 x 512-bit FMA, Zen 5 full-width AVX-512) x 4.3 GHz "
        "= 4.4 TFLOPS); 64 GiB of RAM ASSUMED",
        notes="A CPU-only host: memory = host RAM (64 GiB assumed: give yours with --gpu-spec memory_gib=...), "
        "bandwidth = DDR peak. llama.cpp on the CPU is the realistic engine; decode is bound by DDR bandwidth, "
        "prefill by the vector FP32 rate (AMX / VNNI int8 paths not counted).",
    ),
    dict(
        id="cpu-ddr4-2ch", name="CPU only: desktop, 2-channel DDR4-3200, 16 cores (e.g. Ryzen 9 5950X)",
        vendor="AMD", hardware_class="cpu", architecture="Zen 3 (AVX2)", release_year=2020,
        aliases=["DDR4 desktop", "Ryzen 9 5950X", "AMD Ryzen 9 5950X"],
        nominal_gb=64, memory_gib=64.0, memory_type="DDR4-3200 (2 channels, host RAM)", memory_bandwidth_gb_s=51.2,
        fp32_tflops=1.74, cpu_cores=16, tdp_w=105,
        source="https://www.amd.com/en/products/processors/desktops/ryzen/5000-series/amd-ryzen-9-5950x.html",
        verification="derived (AMD spec: 16 cores, 3.4 GHz base, DDR4-3200 2 channels -> 51.2 GB/s; FP32 = 16 x "
        "32 FLOP/clk (2 x 256-bit FMA) x 3.4 GHz); 64 GiB of RAM ASSUMED",
        notes="A CPU-only host (see cpu-ddr5-2ch).",
    ),
    dict(
        id="cpu-epyc-genoa-12ch", name="CPU only: AMD EPYC 9654 (96 cores, 12-channel DDR5-4800)", vendor="AMD",
        hardware_class="cpu", architecture="Zen 4 (AVX-512 on 256-bit units)", release_year=2022,
        aliases=["EPYC 9654", "AMD EPYC 9654", "EPYC Genoa"],
        nominal_gb=768, memory_gib=768.0, memory_type="DDR5-4800 (12 channels, host RAM)",
        memory_bandwidth_gb_s=460.8, fp32_tflops=7.4, cpu_cores=96, tdp_w=360,
        source="https://www.amd.com/en/products/processors/server/epyc/4th-generation-9004-and-8004-series/"
        "amd-epyc-9654.html",
        verification="derived (AMD spec: 96 cores, 2.4 GHz base, 12 channels DDR5-4800 -> 460.8 GB/s; FP32 = 96 x 32 "
        "FLOP/clk x 2.4 GHz); 768 GiB (12 x 64 GB) ASSUMED",
        notes="One socket. A CPU-only host (see cpu-ddr5-2ch); NUMA and thread placement decide how much of the "
        "bandwidth llama.cpp reaches.",
    ),
    dict(
        id="cpu-xeon-spr-8ch", name="CPU only: Intel Xeon Platinum 8480+ (56 cores, 8-channel DDR5-4800)",
        vendor="Intel", hardware_class="cpu", architecture="Sapphire Rapids (AVX-512, AMX)", release_year=2023,
        aliases=["Xeon Platinum 8480+", "Intel Xeon Platinum 8480+", "Sapphire Rapids"],
        nominal_gb=512, memory_gib=512.0, memory_type="DDR5-4800 (8 channels, host RAM)",
        memory_bandwidth_gb_s=307.2, fp32_tflops=7.2, cpu_cores=56, tdp_w=350,
        source="https://www.intel.com/content/www/us/en/products/sku/231746/intel-xeon-platinum-8480-processor-105m-"
        "cache-2-00-ghz/specifications.html",
        verification="derived (Intel spec: 56 cores, 2.0 GHz base, 8 channels DDR5-4800 -> 307.2 GB/s; FP32 = 56 x 64 "
        "FLOP/clk (2 x 512-bit FMA) x 2.0 GHz); 512 GiB ASSUMED; AMX BF16 not counted",
        notes="One socket. A CPU-only host (see cpu-ddr5-2ch).",
    ),
    # ---------------------------------------------------------------- named by calibration rows (issue 10 / 14)
    dict(
        id="arc-pro-b60", name="Intel Arc Pro B60", vendor="Intel", hardware_class="intel",
        architecture="Xe2-HPG Battlemage (BMG-G21, 20 Xe2-cores, 160 XMX engines)", release_year=2025,
        aliases=["Intel Arc Pro B60", "Arc Pro B60", "Intel(R) Arc(TM) Pro B60 Graphics", "Arc Pro B60 24GB"],
        nominal_gb=24, memory_type="GDDR6 (19 Gbps, 192-bit)", memory_bandwidth_gb_s=456, fp32_tflops=12.3,
        fp16_tflops_dense=98.3, bf16_tflops_dense=98.3, int8_tops_dense=196.6, tdp_w=200, pcie_gen=5,
        pcie_lanes=8, form_factor="2-slot blower (reference)", slots=2,
        source="https://technical.city/en/video/Iris-Xe-Graphics-96EU-vs-Arc-Pro-B60",
        verification="derived (read 2026-11-23 from secondary copies of Intel's table: technical.city and "
        "hmc-tech.com 'Intel Arc Pro B60': 20 Xe2-cores / 2560 lanes, 2.4 GHz, 24 GB GDDR6 192-bit 19 Gbps = "
        "456 GB/s, PCIe 5.0 x8, 200 W; hmc-tech lists 196.61 INT8 / 98.3 BF16 tensor TOPS); XMX rates DERIVED on "
        "the basis Intel uses "
        "for the Arc B580 (233 INT8 TOPS = 160 XMX x 512 ops/clk x 2.85 GHz): 160 x 512 x 2.4 GHz = 196.6 INT8 "
        "TOPS, FP16/BF16 half = 98.3; FP32 = 2560 x 2 x 2.4 GHz = 12.3; re-checked 2026-11-25 (branch s34-arc): the "
        "Xe2 rate behind it, 4,096 INT8 / 2,048 FP16 XMX ops per clock per Xe-core, also gives the Arc Pro B70 figure "
        "Intel lists (32 Xe-cores, 256 XMX engines, 367 INT8 TOPS at ~2.8 GHz, as quoted by "
        "artificialintelligence.dk/b70-blog-alex-v5.html), the vLLM blog (blog.vllm.ai 2025-11-11) states 160 XMX "
        "engines and 20 Xe-cores for the B60, and chipversus.com lists its clock as 2,000-2,400 MHz (the peaks are at "
        "the 2.4 GHz top)",
        notes="The B580's die (BMG-G21) with 24 GB and a 120-200 W board power range (partner boards differ); "
        "the dual-GPU boards (MaxSun Arc Pro B60 Dual) are two of these, seen by software as two devices.",
    ),
    dict(
        id="max-1100", name="Intel Data Center GPU Max 1100", vendor="Intel", hardware_class="intel",
        architecture="Xe-HPC Ponte Vecchio (1 stack, 56 Xe-cores, 448 XMX engines)", release_year=2023,
        aliases=["Intel Data Center GPU Max 1100", "Data Center GPU Max 1100", "GPU Max 1100", "Max 1100",
                 "Intel-Max1100", "PVC 1100"],
        nominal_gb=48, memory_type="HBM2e (4 stacks)", memory_bandwidth_gb_s=1228.8, fp32_tflops=22.2,
        fp16_tflops_dense=355.5, bf16_tflops_dense=355.5, int8_tops_dense=711.0, tdp_w=300, pcie_gen=5,
        pcie_lanes=16, form_factor="PCIe FHFL dual-slot, passive", slots=2,
        nvlink="Xe Link bridge (up to 4 cards); not modelled as NVLink", nvlink_gb_s=None,
        source="https://www.intel.com/content/www/us/en/developer/articles/technical/"
        "intel-data-center-gpu-max-series-overview.html",
        verification="derived (engine counts and clocks from Intel's 'Data Center GPU Max Series Technical "
        "Overview' (ID 766085, updated 2024-04-08: 8 vector + 8 XMX engines per Xe-core, 512-bit vector, 4096-bit "
        "matrix engines); Max 1100 = 56 Xe-cores, 48 GB, 300 W (geektopia.es 2023-04-11 after Tom's Hardware; "
        "glennklockwood.com/garden/processors/pvc lists the SKU), read 2026-11-23; 1.55 GHz max clock, "
        "1228.8 GB/s and PCIe 5.0 x16 from Intel's ark page as known to the builder, not re-read; the bandwidth "
        "re-derived 2026-11-24 from the 8192-bit HBM2e interface at 600 MHz (DDR) listed by "
        "topcpu.net/en/gpu-c/data-center-gpu-max-1100-vs-tesla-m4: 8192 / 8 x 1.2 GT/s = 1228.8 GB/s). DERIVED: "
        "FP32 = 448 x 16 lanes x 2 x 1.55 GHz = 22.2 TFLOPS; XMX BF16/FP16 = 448 x 512 ops/clk x 1.55 GHz = 355.5 "
        "TFLOPS (512 ops/clk per 4096-bit engine at 16-bit inputs); INT8 = 2x",
        notes="One Ponte Vecchio stack (the Max 1550 has two). XPU backend in PyTorch (torch.xpu).",
    ),
    dict(
        id="v100-sxm3-32gb", name="NVIDIA Tesla V100 SXM3 32GB", vendor="NVIDIA", hardware_class="datacenter",
        architecture="Volta (GV100)", release_year=2018,
        aliases=["Tesla V100-SXM3-32GB", "V100-SXM3-32GB", "V100 SXM3 32GB", "V100-SXM3-32GB (DGX-2)",
                 "Tesla V100-SXM3-32GB-H"],
        nominal_gb=32, memory_type="HBM2 (4096-bit)", memory_bandwidth_gb_s=900.0, fp32_tflops=15.7,
        fp16_tflops_dense=125.0, tdp_w=350, pcie_gen=3, pcie_lanes=16,
        nvlink="NVLink2 via NVSwitch (DGX-2 / HGX-2), 6 links x 25 GB/s per direction = 150 GB/s/dir",
        nvlink_gb_s=150.0, form_factor="SXM3 module (DGX-2, HGX-2)",
        source="https://www.nvidia.com/en-us/data-center/dgx-2/",
        verification="partial (NVIDIA DGX-2 datasheet as known to the builder, not re-read in-session: 16 x Tesla "
        "V100 32GB SXM3, '2 petaFLOPS' tensor = 125 TFLOPS per GPU, NVSwitch at 300 GB/s per GPU (bidirectional), "
        "350 W modules; cross-check read 2026-11-23: sysrqmts.com's copy of the TechPowerUp 'Tesla V100 SXM3 32 GB' "
        "entry: GV100, 5120 lanes, boost 1530 MHz, HBM2 4096-bit at 876 MHz = 897 GB/s, FP32 15.67 TFLOPS (it "
        "lists 250 W TDP, which contradicts the DGX-2 figure))",
        notes="The DGX-2 / HGX-2 V100: same GV100, clocks and 32 GB HBM2 as the SXM2 32GB part (so the same "
        "compute and bandwidth), a higher power limit, NVSwitch-connected (all 16 GPUs at full NVLink bandwidth). "
        "Volta: FP16 tensor cores only (no BF16/TF32/INT8 tensor).",
    ),
]

# Apple M5 (October 2025): expanded like the reference table's Apple rows (bins x memory configs).
APPLE_M5_ROW: dict[str, str] = {
    "name": "Apple M5", "vendor": "Apple", "architecture": "Apple silicon SoC (GPU cores with Neural Accelerators)",
    "release_year": "2025", "memory_type": "LPDDR5X", "memory_bandwidth_gb_s": "153", "form_factor": "SoC",
    "source_url": "https://www.apple.com/newsroom/2025/10/apple-unleashes-m5-the-next-big-leap-in-ai-performance-"
    "for-apple-silicon/",
    "verification": f"partial ({AS_RECALLED}: 10-core GPU, 153 GB/s, MacBook Pro 16/24/32 GB)",
    "notes": "Apple quotes 'over 4x the peak GPU compute for AI' of M4 from the Neural Accelerators in each GPU "
    "core but no TFLOPS; the SIMD rate here is DERIVED at the M4 clock and does not count them, so prefill "
    "estimates are pessimistic.",
}

# Apple M5 Pro and M5 Max (announced 2026-03-03 in the 14-/16-inch MacBook Pro; branch s37b-apple2). Apple's
# newsroom and tech-specs pages could not be read in this session (no page of apple.com in the search stores);
# the figures are Apple's press-release numbers as the launch-day reports quote them ("Source: Apple press
# release"): MacRumors 2026-03-03 ("M5 Pro supports up to 64GB ... bandwidth reaching 307GB/s. M5 Max retains
# its 128GB ceiling but raises bandwidth to 614GB/s"; up to 20 / 40 GPU cores), HotHardware 2026-03-03 (the
# same), Lowyat 2026-03-04. 546 GB/s, which a previous helper found for the M5 Max, is the M4 Max 40-core
# figure (Apple, 2024-10): no M5 Max page gives it. The lower bins (M5 Pro 16-core GPU; M5 Max 32-core GPU
# at ~460 GB/s and 36 GB) are NOT from Apple: cputronic.com's M5 Max 32-core page ("around 460 GB/s") and
# the M4 generation's bin pattern (M4 Max 32-core: 410 GB/s, 36 GB only; M4 Pro: both bins at the full
# bandwidth, 24/48/64 GB), so those entries say "unverified" in their notes.
M5_PRO_MAX_REPORTS = (
    "https://www.macrumors.com/2026/03/03/apple-unveils-macbook-pro-with-m5-pro-and-m5-max-chips-with-neural-"
    "accelerators/ ; https://hothardware.com/news/apple-unveils-macbook-pro-m5-pro-m5-max"
)
APPLE_M5_PRO_ROW: dict[str, str] = {
    "name": "Apple M5 Pro", "vendor": "Apple",
    "architecture": "Apple silicon SoC (Fusion Architecture, GPU cores with Neural Accelerators)",
    "release_year": "2026", "memory_type": "LPDDR5X", "memory_bandwidth_gb_s": "307", "form_factor": "SoC (Mac)",
    "source_url": M5_PRO_MAX_REPORTS,
    "verification": "partial (Apple's press-release figures of 2026-03-03 as MacRumors / HotHardware quote them: "
    "18-core CPU, up to 20-core GPU, up to 64 GB, 307 GB/s; Apple's own page not read in-session)",
    "notes": "Up to 20-core GPU, 307 GB/s, up to 64 GB (Apple press release 2026-03-03, as quoted). The 16-core "
    "GPU bin and the 24/48 GB memory steps are UNVERIFIED (assumed from the M4 Pro's bins: both GPU bins at the "
    "full bandwidth, 24/48/64 GB). Apple quotes 'over 4x the peak GPU compute for AI' of M4 Pro from the "
    "Neural Accelerators in each GPU core but no TFLOPS; the SIMD rate here is DERIVED at the M4 clock and does "
    "not count them.",
}
APPLE_M5_MAX_ROW: dict[str, str] = {
    "name": "Apple M5 Max", "vendor": "Apple",
    "architecture": "Apple silicon SoC (Fusion Architecture, GPU cores with Neural Accelerators)",
    "release_year": "2026", "memory_type": "LPDDR5X", "memory_bandwidth_gb_s": "614", "form_factor": "SoC (Mac)",
    "source_url": M5_PRO_MAX_REPORTS,
    "verification": "partial (Apple's press-release figures of 2026-03-03 as MacRumors / HotHardware quote them: "
    "18-core CPU, up to 40-core GPU, up to 128 GB, 614 GB/s; Apple's own page not read in-session)",
    "notes": "614 GB/s for the 40-core GPU bin, up to 128 GB (Apple press release 2026-03-03, as quoted; 546 "
    "GB/s is the M4 Max's figure). The 32-core GPU bin's ~460 GB/s and 36 GB are UNVERIFIED (cputronic.com "
    "'around 460 GB/s'; the M4 Max 32-core bin: 410 GB/s, 36 GB only); the 40-core bin's 48/64/128 GB steps "
    "follow the M4 Max's (cputronic.com lists the same). Apple quotes 'over 4x the peak GPU compute for AI' of "
    "M4 Max from the Neural Accelerators in each GPU core but no TFLOPS; the SIMD rate here is DERIVED at the "
    "M4 clock and does not count them.",
}
