"""Regenerate mlrig/data/gpus.json from the accelerator reference table plus EXTRAS.

    python scripts/build_gpu_catalog.py [--csv PATH] [--out PATH]

Inputs
  * scripts/data/accelerators_reference.csv (see its .md): dense tensor rates with FP32 accumulate,
    never 2:4-sparse; GeForce FP16/BF16/FP8 with FP32 accumulate at half the
    FP16-accumulate rate. Rows keep the table's source URL and verification grade.
  * EXTRAS below: commonly asked-about accelerators the table lacks, each with its own source.

Conventions applied here (documented once, used for every entry)
  * memory_gib: the total NVML / nvidia-smi reports, in GiB (2^30 bytes). Where the shipped
    figure is well known (NVML_MIB, e.g. RTX 4090 24564 MiB, H100 80GB 81559 MiB) it is used;
    otherwise `reported_gib()`: "N GB" of GDDR/HBM is N GiB of DRAM; GDDR parts that ship with
    ECC on (Tesla, A10/A40, L-series) lose 1/16 to in-band ECC; firmware keeps ~12 MiB (GDDR) or
    ~0.45 % (HBM). Expect +-1 %. CUDA and frameworks see ~0.3-0.5 GiB less again (vLLM reports
    79.18 GiB total on an H100 80GB); that CUDA-context cost is the memory estimator's to model.
  * Apple: memory_gib = unified memory; usable_memory_gib = Metal recommendedMaxWorkingSetSize, which
    macOS sets by default to ~3/4 of RAM for >= 64 GB machines and ~2/3 below (llama.cpp logs, e.g.
    ggml-org/llama.cpp#1870 "recommendedMaxWorkingSetSize = 49152 MB" on 64 GB, 10922.67 MB on 16 GB;
    https://developer.apple.com/documentation/metal/mtldevice/recommendedmaxworkingsetsize).
    Newer macOS releases report more (M3 16 GB: 11.84 GB; 128 GB: 107.5 GiB), and
    `sysctl iogpu.wired_limit_mb` raises it, so the rule is conservative.
  * Multi-die boards that software sees as two GPUs (K80, MI250X) are catalogued per device
    (devices_per_board = 2), because a single process cannot use the other half's memory.
  * nvlink_gb_s: per direction, GPU to GPU (NVIDIA quotes bidirectional totals: 900 GB/s = 450/dir).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = ROOT / "scripts" / "data" / "accelerators_reference.csv"
DEFAULT_OUT = ROOT / "mlrig" / "data" / "gpus.json"
CSV_DATE = "2026-11-22"  # date the reference table was retrieved (file date; the table carries none)
TODAY = "2026-11-22"
REF_MD = "scripts/data/accelerators_reference.md"

# ---------------------------------------------------------------------------------------------
# Per-row metadata for the CSV: id, display name, class, NVML/marketing aliases, NVLink per direction.
# ---------------------------------------------------------------------------------------------
CSV_META: dict[str, dict[str, Any]] = {
    "GeForce RTX 2080 Ti": dict(id="rtx-2080-ti", aliases=["NVIDIA GeForce RTX 2080 Ti"], nvlink_gb_s=50.0,
                                 nvlink_max_gpus=2),
    "GeForce RTX 3060 12GB": dict(id="rtx-3060-12gb", aliases=["NVIDIA GeForce RTX 3060"]),
    "GeForce RTX 3070": dict(id="rtx-3070", aliases=["NVIDIA GeForce RTX 3070"]),
    "GeForce RTX 3080 10GB": dict(id="rtx-3080-10gb", aliases=["NVIDIA GeForce RTX 3080"]),
    "GeForce RTX 3080 Ti": dict(id="rtx-3080-ti", aliases=["NVIDIA GeForce RTX 3080 Ti"]),
    "GeForce RTX 3090": dict(id="rtx-3090", aliases=["NVIDIA GeForce RTX 3090"], nvlink_gb_s=56.25, nvlink_max_gpus=2),
    "GeForce RTX 3090 Ti": dict(id="rtx-3090-ti", aliases=["NVIDIA GeForce RTX 3090 Ti"], nvlink_gb_s=56.25,
                                 nvlink_max_gpus=2),
    "GeForce RTX 4060 Ti 16GB": dict(id="rtx-4060-ti-16gb", aliases=["NVIDIA GeForce RTX 4060 Ti"]),
    "GeForce RTX 4070": dict(id="rtx-4070", aliases=["NVIDIA GeForce RTX 4070"]),
    "GeForce RTX 4070 Ti SUPER": dict(id="rtx-4070-ti-super", aliases=["NVIDIA GeForce RTX 4070 Ti SUPER"]),
    "GeForce RTX 4080": dict(id="rtx-4080", aliases=["NVIDIA GeForce RTX 4080"]),
    "GeForce RTX 4080 SUPER": dict(id="rtx-4080-super", aliases=["NVIDIA GeForce RTX 4080 SUPER"]),
    "GeForce RTX 4090": dict(id="rtx-4090", aliases=["NVIDIA GeForce RTX 4090"]),
    "GeForce RTX 5070 Ti": dict(id="rtx-5070-ti", aliases=["NVIDIA GeForce RTX 5070 Ti"]),
    "GeForce RTX 5080": dict(id="rtx-5080", aliases=["NVIDIA GeForce RTX 5080"]),
    "GeForce RTX 5090": dict(id="rtx-5090", aliases=["NVIDIA GeForce RTX 5090"]),
    "RTX A4000": dict(id="rtx-a4000", aliases=["NVIDIA RTX A4000"]),
    "RTX A5000": dict(id="rtx-a5000", aliases=["NVIDIA RTX A5000"], nvlink_gb_s=56.25, nvlink_max_gpus=2),
    "RTX A6000": dict(id="rtx-a6000", aliases=["NVIDIA RTX A6000"], nvlink_gb_s=56.25, nvlink_max_gpus=2),
    "RTX 6000 Ada Generation": dict(
        id="rtx-6000-ada", aliases=["NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"]
    ),
    "RTX PRO 6000 Blackwell Workstation Edition": dict(
        id="rtx-pro-6000-blackwell",
        aliases=[
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "RTX PRO 6000 Blackwell",
            "RTX PRO 6000",
        ],
    ),
    "Tesla T4": dict(id="t4", aliases=["Tesla T4", "NVIDIA T4"], ecc=True),
    "Tesla V100 SXM2 16GB": dict(
        id="v100-sxm2-16gb", aliases=["Tesla V100-SXM2-16GB", "V100 SXM2 16GB"], nvlink_gb_s=150.0
    ),
    "Tesla V100 PCIe 16GB": dict(id="v100-pcie-16gb", aliases=["Tesla V100-PCIE-16GB", "V100 PCIe 16GB"]),
    "Tesla V100 SXM2 32GB": dict(
        id="v100-sxm2-32gb", aliases=["Tesla V100-SXM2-32GB", "V100 SXM2 32GB"], nvlink_gb_s=150.0
    ),
    "Tesla V100 PCIe 32GB": dict(id="v100-pcie-32gb", aliases=["Tesla V100-PCIE-32GB", "V100 PCIe 32GB"]),
    "A10": dict(id="a10", aliases=["NVIDIA A10"], ecc=True),
    "A40": dict(id="a40", aliases=["NVIDIA A40"], ecc=True, nvlink_gb_s=56.25, nvlink_max_gpus=2),
    "L4": dict(id="l4", aliases=["NVIDIA L4"], ecc=True),
    "L40S": dict(id="l40s", aliases=["NVIDIA L40S"], ecc=True),
    "A100 40GB PCIe": dict(
        id="a100-pcie-40gb", aliases=["NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"], nvlink_gb_s=300.0,
        nvlink_max_gpus=2,
    ),
    "A100 80GB SXM": dict(
        id="a100-sxm-80gb", aliases=["NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"], nvlink_gb_s=300.0
    ),
    "H100 PCIe": dict(id="h100-pcie-80gb", aliases=["NVIDIA H100 PCIe", "H100 PCIe 80GB"], nvlink_gb_s=300.0,
                      nvlink_max_gpus=2),
    "H100 SXM": dict(
        id="h100-sxm-80gb",
        aliases=["NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", "H100 SXM 80GB"],
        nvlink_gb_s=450.0,
    ),
    "H100 NVL": dict(id="h100-nvl-94gb", aliases=["NVIDIA H100 NVL", "H100 NVL 94GB", "H100 94GB"], nvlink_gb_s=300.0,
                     nvlink_max_gpus=2),
    "H200 SXM": dict(
        id="h200-sxm-141gb", aliases=["NVIDIA H200", "H200 SXM 141GB", "H200 SXM5"], nvlink_gb_s=450.0
    ),
    "B200 (HGX B200)": dict(
        id="b200-180gb", name="NVIDIA B200 (HGX B200)", aliases=["NVIDIA B200", "B200 SXM"], nvlink_gb_s=900.0
    ),
    "GH200 Grace Hopper Superchip (96GB HBM3)": dict(
        id="gh200-96gb", aliases=["NVIDIA GH200 480GB", "GH200 96GB", "GH200 Grace Hopper"], nvlink_gb_s=450.0
    ),
    "Tesla P40": dict(id="p40", aliases=["Tesla P40", "NVIDIA Tesla P40"], ecc=True),
    "Tesla P100 PCIe 16GB": dict(id="p100-pcie-16gb", aliases=["Tesla P100-PCIE-16GB", "P100 PCIe 16GB"]),
    "Tesla K80": dict(id="k80", aliases=["Tesla K80", "NVIDIA Tesla K80"], ecc=True, per_device=2),
    "Tesla M40 24GB": dict(id="m40-24gb", aliases=["Tesla M40 24GB", "NVIDIA Tesla M40"], ecc=True),
    # per device = one GCD; "(single GCD)" is how sources that ran on one die say so (gpt-fast README)
    "Instinct MI250X": dict(id="mi250x", aliases=["AMD Instinct MI250X", "MI250X", "AMD Instinct MI250X (single GCD)",
                                                  "MI250X GCD", "MI250X (single GCD)"], per_device=2),
    "Instinct MI300X": dict(id="mi300x", aliases=["AMD Instinct MI300X", "MI300X"], nvlink_gb_s=448.0),
    "Instinct MI325X": dict(id="mi325x", aliases=["AMD Instinct MI325X", "MI325X"], nvlink_gb_s=448.0),
    "Radeon RX 7900 XTX": dict(id="rx-7900-xtx", aliases=["AMD Radeon RX 7900 XTX", "Radeon RX 7900 XTX"]),
    "Radeon PRO W7900": dict(id="radeon-pro-w7900", aliases=["AMD Radeon PRO W7900"]),
    "Arc A770 16GB": dict(id="arc-a770-16gb", aliases=["Intel(R) Arc(TM) A770 Graphics", "Intel Arc A770"]),
    "Gaudi 2 (HL-225)": dict(id="gaudi2", aliases=["Intel Gaudi 2", "Gaudi2", "HL-225"]),
    "Gaudi 3 (HL-325L OAM)": dict(id="gaudi3", aliases=["Intel Gaudi 3", "Gaudi3", "HL-325L"]),
    "NVIDIA DGX Spark (GB10)": dict(id="dgx-spark", aliases=["NVIDIA GB10", "DGX Spark", "GB10"]),
    "Jetson AGX Orin 64GB": dict(id="jetson-agx-orin-64gb", aliases=["NVIDIA Jetson AGX Orin", "Orin"]),
}

# Figures the reference table leaves blank but that have a documented derivation: `set` replaces
# fields of the CSV-built entry, `source` is appended to the row's source, and `verification` / `note`
# go in front of the row's own (whose note may still say "not entered": the override supersedes it).
CSV_OVERRIDES: dict[str, dict[str, Any]] = {
    "b200-180gb": dict(
        set=dict(fp4_tflops_dense=9000.0),
        source="https://www.nvidia.com/en-us/data-center/hgx/",
        verification="FP4 dense = the HGX B200 page's 18 PF per GPU (with sparsity) halved; the row's own "
        "cross-checks (Blackwell datasheet 'FP4 18 PF*', glennklockwood.com FP4 9000/18000) agree",
        note="CATALOG OVERRIDE: FP4 dense 9,000 TFLOPS entered (the reference table has no FP4 column; NVFP4 "
        "training prices its linear GEMMs at it).",
    ),
    "rtx-pro-6000-blackwell": dict(
        set=dict(fp4_tflops_dense=2015.2),
        source="https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/quadro-product-literature/"
        "NVIDIA-RTX-Blackwell-PRO-GPU-Architecture-v1.0.pdf",
        verification="FP4 dense DERIVED as 4x the whitepaper's FP16 dense 503.8 (Blackwell's 4:2:1 FP4:FP8:FP16 "
        "ratio; the whitepaper's FP8 is 2x FP16); NVIDIA's '4000 AI TOPS' is FP4 with sparsity, ~2,000 dense",
        note="CATALOG OVERRIDE: FP4 dense 2,015.2 TFLOPS entered, as the Server and Max-Q entries carry theirs "
        "(the reference table has no FP4 column).",
    ),
    # GeForce Blackwell (sm_120): the reference table's notes give FP4 dense but its FP4 column is empty, so NVFP4
    # (W4A4) GEMMs fell back to the de-quantised 16-bit rate. FP4 accumulates at full rate on GeForce (not halved
    # as FP16/BF16/FP8 with FP32 accumulate are): FP4 dense = 'AI TOPS' (FP4 with sparsity) / 2 = 4x FP8 (FP32 acc)
    "rtx-5070-ti": dict(
        set=dict(fp4_tflops_dense=703.0),
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/",
        verification="FP4 dense DERIVED as NVIDIA's 1406 'AI TOPS' (FP4 with sparsity) / 2, as the row's notes say",
        note="CATALOG OVERRIDE: FP4 dense 703 TFLOPS entered (the reference table has no FP4 column).",
    ),
    "rtx-5080": dict(
        set=dict(fp4_tflops_dense=900.4),
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5080/",
        verification="FP4 dense DERIVED as NVIDIA's 1801 'AI TOPS' (FP4 with sparsity) / 2, as the row's notes say",
        note="CATALOG OVERRIDE: FP4 dense 900.4 TFLOPS entered (the reference table has no FP4 column).",
    ),
    "rtx-5090": dict(
        set=dict(fp4_tflops_dense=1676.0),
        source="https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf",
        verification="FP4 dense 1676 from the RTX Blackwell whitepaper "
        "(Appendix A, Table 3: FP4 1676 dense / 3352 sparse)",
        note="CATALOG OVERRIDE: FP4 dense 1,676 TFLOPS entered (the reference table has no FP4 column).",
    ),
    "dgx-spark": dict(
        set=dict(fp16_tflops_dense=125.0, bf16_tflops_dense=125.0, fp8_tflops_dense=250.0, fp4_tflops_dense=500.0),
        source="https://www.nvidia.com/en-us/products/workstations/dgx-spark/",
        verification="tensor rates DERIVED in the catalog build from NVIDIA's '1 PFLOP FP4' (with sparsity)",
        note="CATALOG OVERRIDE (scripts/build_gpu_catalog.py): tensor rates DERIVED so that the planner does not "
        "fall back to the 31 TFLOPS FP32 rate: FP4 dense = 1,000 / 2 = 500 TFLOPS; FP8 = 250 and FP16/BF16 = 125 "
        "at Blackwell's 4:2:1 FP4:FP8:FP16 ratio (RTX PRO 6000: 2,000 / 1,007.6 / 503.8, full-rate FP32 "
        "accumulate). If GB10 accumulates FP16 in FP32 at GeForce's half rate, BF16 is 62.5: prefill estimates "
        "may be up to 2x optimistic until measured. The table note's 'not published' refers to NVIDIA.",
    ),
    "mi300x": dict(
        set=dict(nvlink="Infinity Fabric, 7 links x 128 GB/s = 896 GB/s aggregate (bidirectional), 8-GPU mesh"),
        source="https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
        verification="Infinity Fabric figure from the AMD MI300X data sheet as known to the builder (not re-read)",
        note="CATALOG OVERRIDE: GPU-GPU links are AMD Infinity Fabric (7 x16 links at 128 GB/s bidirectional to "
        "the 7 peers of an 8-GPU OAM platform: 896 GB/s aggregate, nvlink_gb_s = 448 per direction).",
    ),
    "mi325x": dict(
        set=dict(nvlink="Infinity Fabric, 7 links x 128 GB/s = 896 GB/s aggregate (bidirectional), 8-GPU mesh"),
        source="https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html",
        verification="Infinity Fabric figure as MI300X (same links; AMD spec page as known to the builder)",
        note="CATALOG OVERRIDE: Infinity Fabric as MI300X (896 GB/s aggregate, 448 per direction).",
    ),
    # Jetson Orin: NVIDIA publishes only sparse INT8 TOPS for the GPU; its Ampere tensor cores are the
    # A100 kind (2,048 dense FP16 FLOP/clk/SM, 4,096 INT8: A100 = 312 TFLOPS FP16 / 624 TOPS INT8 over
    # 108 SM x 1.41 GHz), so FP16/BF16 dense = INT8 dense / 2, and the SM count and clock agree (the
    # Orin Nano in gpu_extras_2026.py likewise).
    "jetson-agx-orin-64gb": dict(
        set=dict(fp16_tflops_dense=42.5, bf16_tflops_dense=42.5),
        source="https://www.nvidia.com/content/dam/en-zz/Solutions/gtcf21/jetson-orin/"
        "nvidia-jetson-agx-orin-technical-brief.pdf",
        verification="FP16/BF16 tensor rate DERIVED in the catalog build from the GPU's 170 sparse INT8 TOPS",
        note="CATALOG OVERRIDE (scripts/build_gpu_catalog.py): FP16/BF16 dense DERIVED = 85 dense INT8 TOPS / 2 "
        "= 42.5 TFLOPS (Ampere tensor cores run FP16 at half their INT8 rate; cross-check: 16 SM x 2,048 "
        "FLOP/clk x 1.3 GHz = 42.6), so that the planner does not fall back to the 5.3 TFLOPS FP32 rate for "
        "prefill (it did: TinyChat's FP16 prefill on an AGX Orin was predicted 8x too slow).",
    ),
    "arc-a770-16gb": dict(
        set=dict(fp16_tflops_dense=137.6, bf16_tflops_dense=137.6, int8_tops_dense=275.3),
        source="https://www.intel.com/content/www/us/en/developer/articles/technical/"
        "introduction-to-the-xe-hpg-architecture.html",
        verification="XMX figures DERIVED in the catalog build (Intel per-engine XMX rates x Intel's rated "
        "2.1 GHz graphics clock; Intel quotes no A770 TOPS)",
        note="CATALOG OVERRIDE (scripts/build_gpu_catalog.py): XMX dense rates DERIVED = 32 Xe-cores x 16 XMX "
        "engines (512, Intel spec) x 128 FP16/BF16 ops/clk per engine (256 INT8; Intel 'Introduction to the "
        "Xe-HPG Architecture') x 2.1 GHz Intel graphics clock = 137.6 TFLOPS FP16/BF16, 275.3 TOPS INT8 - the "
        "same basis as Intel's own Arc B580 figure (233 INT8 TOPS = 160 XMX x 512 x 2.85 GHz). Intel documents "
        "one XMX rate per input type (FP16/BF16 products accumulate in FP32). fp32_tflops (19.7) stays at the "
        "2.4 GHz spec-database clock (17.2 at 2.1 GHz). The table note below predates this derivation.",
    ),
}

# NVML memory.total (nvidia-smi "MiB"), where the shipped value is well known from public
# nvidia-smi output; overrides the rule in `reported_gib`. CUDA/frameworks see ~0.3-0.5 GiB less
# (vLLM logs "total memory 79.18 GiB" on an H100 80GB HBM3, mlrig/data/calibration/
# inference_memory.csv): that CUDA-context cost belongs to the memory estimator, not the catalog.
# The three 24 GB GDDR6X GeForce cards differ by 12 MiB, as nvidia-smi prints them (public nvidia-smi tables found
# with the project's code search, 2026-11-25: "NVIDIA GeForce RTX 3090 ... / 24576MiB" in nine independent files,
# drivers 530-580; "RTX 4090 ... / 24564MiB" in eight, drivers 535-580; "RTX 3090 Ti ... / 24564MiB" in eight,
# drivers 535-580). NVIDIA specifies all three as "24 GB GDDR6X" (the GA102 and AD102 whitepapers' Appendix A); the
# RTX 3090 (24 x 1 GB modules, clamshell) reports the whole 24 GiB, the 3090 Ti and 4090 (12 x 2 GB; their
# nvidia-smi shows the ECC column as "Off", i.e. ECC-capable, where the 3090 shows "N/A") 12 MiB less. So the
# catalog's 24.0 GiB (3090) and 23.99 GiB (3090 Ti, 4090) are both what the driver reports, not a rounding slip.
NVML_MIB: dict[str, int] = {
    "rtx-4090": 24564,
    "rtx-3090": 24576,
    "rtx-3090-ti": 24564,
    "h100-sxm-80gb": 81559,
    "h100-pcie-80gb": 81559,
    "h100-nvl-94gb": 95830,
    "h200-sxm-141gb": 143771,
    "a100-sxm-80gb": 81920,
    "a100-pcie-80gb": 81920,
    "v100-sxm2-16gb": 16160,
    "v100-pcie-16gb": 16160,
    "t4": 15360,
    "l4": 23034,
    "a10": 23028,
    "a10g": 23028,
    "l40s": 46068,
}

# Apple chips: (GPU core bins -> memory configs in GB), bandwidth per bin (GB/s) where it differs.
# FP16 SIMD rate per GPU core (TFLOPS) where Apple quoted the chip's TFLOPS (M1 family: 2.6 TF/8 cores;
# M2 family: 3.6 TF/10 cores, 13.6 TF/38 cores). M3/M4: Apple publishes no TFLOPS, so the rate is
# DERIVED as cores x 128 FP32 ALUs x 2 FLOP (FMA) x GPU clock (`clock`, one of APPLE_CLOCKS: the top GPU
# DVFS state that `powermetrics` lists; Apple publishes no GPU clock either). Apple GPUs have no matrix
# units and run FP16 at the FP32 rate, so fp32_tflops == fp16_tflops_dense for every Apple entry
# (M1/M2 as well: 2.6 TF = 8 x 128 x 2 x 1.278 GHz), and bf16 is left blank.
APPLE_CLOCKS: dict[str, tuple[float, str, str]] = {
    # key: (GHz, where the clock comes from, URL)
    "m3": (
        1.338,
        "1.338 GHz = top GPU DVFS state in `powermetrics` on M3 MacBook Airs (Mac15,13 in applegpuinfo#15; "
        "a Mac15,12 log in a public repo shows the same 13-state table, 338..1338 MHz)",
        "https://github.com/philipturner/applegpuinfo/issues/15",
    ),
    "m3x": (
        1.380,
        "1.380 GHz = top GPU DVFS state in `powermetrics` on M3 Pro and M3 Max (applegpuinfo#4, the maintainer "
        "checking an M3 Max log: '1.398 GHz -> 1.380 GHz'; an M3 Pro log in a public repo ends at 1380 MHz); "
        "hmc-tech.com lists 1398 MHz (+1.3 %)",
        "https://github.com/philipturner/applegpuinfo/issues/4",
    ),
    "m3-ultra": (
        1.380,
        "1.380 GHz ASSUMED = the M3 Max clock (M3 Ultra is two M3 Max dies; no M3 Ultra log seen)",
        "https://github.com/philipturner/applegpuinfo/issues/4",
    ),
    "m4": (
        1.578,
        "1.578 GHz = top GPU DVFS state (P15, 1055 mV) in `powermetrics`/IOReport logs of M4 (AGXAcceleratorG16G) "
        "and a loaded M4 Max Mac Studio in public repos; hmc-tech.com lists 1578 MHz for the 8-core M4 (other "
        "pages of it give 1470 = state P14, and 1678 for M4 Max)",
        "https://hmc-tech.com/gpu/apple-8-core-m4-fl-vs-apple-24-core-m1-max",
    ),
    "m5": (
        1.578,
        "1.578 GHz ASSUMED = the M4 top DVFS state (no M5 GPU clock published or logged in the sources seen)",
        "https://hmc-tech.com/gpu/apple-8-core-m4-fl-vs-apple-24-core-m1-max",
    ),
    "m4-pro": (
        1.578,
        "1.578 GHz ASSUMED = the M4 / M4 Max top DVFS state (no M4 Pro log seen)",
        "https://hmc-tech.com/gpu/apple-8-core-m4-fl-vs-apple-24-core-m1-max",
    ),
}
# gpu_family: the chip's Metal GPU family (Apple, "Metal feature set tables",
# https://developer.apple.com/metal/Metal-Feature-Set-Tables.pdf: M1 = Apple7, M2 = Apple8, M3 and M4 = Apple9,
# M5 = Apple10). From Apple9 on the shader core issues FP32, FP16 and integer instructions in parallel
# (Apple tech talk "Explore GPU advancements in M3 and A17 Pro", 2023-11; the estimators read the family
# from `architecture`).
APPLE: dict[str, dict[str, Any]] = {
    "Apple M1": dict(bins={7: [8, 16], 8: [8, 16]}, tf_per_core=2.6 / 8, gpu_family="Apple7"),
    "Apple M1 Pro": dict(bins={14: [16, 32], 16: [16, 32]}, tf_per_core=10.4 / 32, gpu_family="Apple7"),
    "Apple M1 Max": dict(bins={24: [32, 64], 32: [32, 64]}, tf_per_core=10.4 / 32, gpu_family="Apple7"),
    "Apple M1 Ultra": dict(bins={48: [64, 128], 64: [64, 128]}, tf_per_core=10.4 / 32, gpu_family="Apple7"),
    "Apple M2": dict(bins={8: [8, 16, 24], 10: [8, 16, 24]}, tf_per_core=3.6 / 10, gpu_family="Apple8"),
    "Apple M2 Pro": dict(bins={16: [16, 32], 19: [16, 32]}, tf_per_core=13.6 / 38, gpu_family="Apple8"),
    "Apple M2 Max": dict(bins={30: [32, 64, 96], 38: [32, 64, 96]}, tf_per_core=13.6 / 38, gpu_family="Apple8"),
    "Apple M2 Ultra": dict(bins={60: [64, 128, 192], 76: [64, 128, 192]}, tf_per_core=13.6 / 38,
                           gpu_family="Apple8"),
    "Apple M3": dict(bins={8: [8, 16, 24], 10: [8, 16, 24]}, clock="m3", gpu_family="Apple9"),
    "Apple M3 Pro": dict(bins={14: [18, 36], 18: [18, 36]}, clock="m3x", gpu_family="Apple9"),
    "Apple M3 Max": dict(bins={30: [36, 96], 40: [48, 64, 128]}, bw={30: 300.0, 40: 400.0}, clock="m3x",
                         gpu_family="Apple9"),
    "Apple M3 Ultra": dict(bins={60: [96, 256], 80: [96, 256, 512]}, clock="m3-ultra", gpu_family="Apple9"),
    "Apple M4": dict(bins={8: [16, 24], 10: [16, 24, 32]}, clock="m4", gpu_family="Apple9"),
    "Apple M4 Pro": dict(bins={16: [24, 48, 64], 20: [24, 48, 64]}, clock="m4-pro", gpu_family="Apple9"),
    "Apple M4 Max": dict(bins={32: [36], 40: [48, 64, 128]}, bw={32: 410.0, 40: 546.0}, clock="m4",
                         gpu_family="Apple9"),
    "Apple M5": dict(bins={10: [16, 24, 32]}, clock="m5", gpu_family="Apple10"),
    # M5 Pro / M5 Max (2026-03): the M5 GPU generation (Apple: "scales up the next-generation architecture
    # introduced in M5"); bins and bandwidths: scripts/gpu_extras_2026.py APPLE_M5_PRO_ROW / APPLE_M5_MAX_ROW.
    "Apple M5 Pro": dict(bins={16: [24, 48, 64], 20: [24, 48, 64]}, clock="m5", gpu_family="Apple10"),
    "Apple M5 Max": dict(bins={32: [36], 40: [48, 64, 128]}, bw={32: 460.0, 40: 614.0}, clock="m5",
                         gpu_family="Apple10"),
}

NVIDIA_DS = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"

# ---------------------------------------------------------------------------------------------
# EXTRAS: asked-about accelerators absent from the reference table. Same conventions (dense,
# FP32 accumulate). `verification` says how each figure was checked.
# ---------------------------------------------------------------------------------------------
EXTRAS: list[dict[str, Any]] = [
    dict(
        id="a100-sxm-40gb",
        name="NVIDIA A100 SXM4 40GB",
        vendor="NVIDIA",
        hardware_class="datacenter",
        architecture="Ampere (GA100)",
        release_year=2020,
        aliases=["NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"],
        nominal_gb=40,
        memory_type="HBM2 (5120-bit)",
        memory_bandwidth_gb_s=1555,
        fp32_tflops=19.5,
        fp16_tflops_dense=312,
        bf16_tflops_dense=312,
        int8_tops_dense=624,
        tdp_w=400,
        pcie_gen=4,
        pcie_lanes=16,
        nvlink="NVLink3, 12 links, 600 GB/s total",
        nvlink_gb_s=300.0,
        form_factor="SXM4 module",
        source=NVIDIA_DS,
        verification="partial",
        notes="Same compute as A100 80GB SXM (reference table row notes: '40 GB SXM4 = 1,555 GB/s').",
    ),
    dict(
        id="a100-pcie-80gb",
        name="NVIDIA A100 80GB PCIe",
        vendor="NVIDIA",
        hardware_class="datacenter",
        architecture="Ampere (GA100)",
        release_year=2021,
        aliases=["NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"],
        nominal_gb=80,
        memory_type="HBM2e (5120-bit)",
        memory_bandwidth_gb_s=1935,
        fp32_tflops=19.5,
        fp16_tflops_dense=312,
        bf16_tflops_dense=312,
        int8_tops_dense=624,
        tdp_w=300,
        pcie_gen=4,
        pcie_lanes=16,
        nvlink="optional 2-GPU NVLink bridge, 600 GB/s total",
        nvlink_gb_s=300.0,
        nvlink_max_gpus=2,
        form_factor="2-slot FHFL, passive",
        slots=2,
        source=NVIDIA_DS,
        verification="partial",
        notes="1,935 GB/s and 300 W from the reference table's A100 40GB PCIe notes (datasheet r4).",
    ),
    dict(
        id="h200-nvl-141gb",
        name="NVIDIA H200 NVL",
        vendor="NVIDIA",
        hardware_class="datacenter",
        architecture="Hopper (GH100)",
        release_year=2024,
        aliases=["NVIDIA H200 NVL", "H200 NVL 141GB"],
        nominal_gb=141,
        memory_type="HBM3e",
        memory_bandwidth_gb_s=4800,
        fp32_tflops=60,
        fp16_tflops_dense=835.5,
        bf16_tflops_dense=835.5,
        fp8_tflops_dense=1670.5,
        int8_tops_dense=1670.5,
        tdp_w=600,
        pcie_gen=5,
        pcie_lanes=16,
        nvlink="2- or 4-way NVLink bridge, 900 GB/s total",
        nvlink_gb_s=450.0,
        nvlink_max_gpus=4,
        form_factor="2-slot PCIe, passive",
        slots=2,
        source="https://www.nvidia.com/en-us/data-center/h200/",
        verification="partial",
        notes="Datasheet prints sparse FP16 1,671 -> 835.5 dense (reference table H200 notes); up to 600 W.",
    ),
    dict(
        id="l40",
        name="NVIDIA L40",
        vendor="NVIDIA",
        hardware_class="datacenter",
        architecture="Ada Lovelace (AD102)",
        release_year=2022,
        aliases=["NVIDIA L40"],
        ecc=True,
        nominal_gb=48,
        memory_type="GDDR6 ECC (384-bit)",
        memory_bandwidth_gb_s=864,
        fp32_tflops=90.5,
        fp16_tflops_dense=181.05,
        bf16_tflops_dense=181.05,
        fp8_tflops_dense=362,
        int8_tops_dense=362,
        tdp_w=300,
        pcie_gen=4,
        pcie_lanes=16,
        form_factor="2-slot FHFL, passive",
        slots=2,
        source="https://www.nvidia.com/en-us/data-center/l40/",
        verification="verified",
        notes="NVIDIA's L40/L40S table (reproduced at https://www.mullet.se/product.html?product_id=355414): "
        "L40 FP16/BF16 181.05|362.1*, FP8 362|724*, INT8 362|724* (*sparse) - half the L40S rate.",
    ),
    dict(
        id="a10g",
        name="NVIDIA A10G",
        vendor="NVIDIA",
        hardware_class="datacenter",
        architecture="Ampere (GA102)",
        release_year=2021,
        aliases=["NVIDIA A10G", "AWS A10G"],
        ecc=True,
        nominal_gb=24,
        memory_type="GDDR6",
        memory_bandwidth_gb_s=600,
        fp32_tflops=35.0,
        fp16_tflops_dense=70.0,
        bf16_tflops_dense=70.0,
        tdp_w=300,
        pcie_gen=4,
        pcie_lanes=16,
        form_factor="AWS G5 instances only",
        source="https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/",
        verification="partial",
        notes="AWS-only variant; NVIDIA publishes no datasheet. Tensor 70 TFLOPS is consistent with "
        "80 SM x 512 FLOP/clk x 1.71 GHz (half-rate FP32 accumulate, like GeForce); 24 GB/600 GB/s "
        "shared with the A10. Checked s34 against a measurement: a long torch.matmul loop on an A10G reaches "
        "BF16 69.47 / FP16 69.47 / TF32 34.71 TFLOPS at 10240^3 (github.com/zzc0721/torch-performance-test-data "
        "issue #126, 2026-01-20, PyTorch 2.7.0 cu128): the 70 rating at full boost and TF32 at half of it, the "
        "GeForce-like rates, not the A10's full-rate 125 (a 125-class GA102 at 300 W reaches 122: the A40). The "
        "300 W board power is not in an AWS or NVIDIA document read here; it does not matter for the board-power "
        "bound (efficiency.BOARD_TFLOP_PER_J: 0.42 x 150 W / 0.8 = 79 > 70 even at the A10's 150 W).",
    ),
    dict(
        id="mi210",
        name="AMD Instinct MI210",
        vendor="AMD",
        hardware_class="amd",
        architecture="CDNA 2 (one GCD)",
        release_year=2022,
        aliases=["AMD Instinct MI210", "MI210"],
        nominal_gb=64,
        memory_type="HBM2e (4096-bit)",
        memory_bandwidth_gb_s=1638.4,
        fp32_tflops=22.6,
        fp16_tflops_dense=181.0,
        bf16_tflops_dense=181.0,
        int8_tops_dense=181.0,
        tdp_w=300,
        pcie_gen=4,
        pcie_lanes=16,
        nvlink="no (Infinity Fabric bridge, 3 links)",
        form_factor="2-slot PCIe, passive",
        slots=2,
        source="https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html",
        verification="verified",
        notes="AnandTech launch table (AMD figures): 104 CU, 1700 MHz, FP16 matrix 181 TFLOPS, 1.6 TB/s, "
        "300 W. CDNA2 has no sparsity figures.",
    ),
    dict(
        id="rtx-4070-ti",
        name="NVIDIA GeForce RTX 4070 Ti",
        vendor="NVIDIA",
        hardware_class="geforce",
        architecture="Ada Lovelace (AD104)",
        release_year=2023,
        aliases=["NVIDIA GeForce RTX 4070 Ti"],
        nominal_gb=12,
        memory_type="GDDR6X (21 Gbps, 192-bit)",
        memory_bandwidth_gb_s=504,
        fp32_tflops=40.1,
        fp16_tflops_dense=80.2,
        bf16_tflops_dense=80.2,
        fp8_tflops_dense=160.4,
        int8_tops_dense=320.7,
        tdp_w=285,
        pcie_gen=4,
        pcie_lanes=16,
        form_factor="partner cards only",
        launch_price_usd=799,
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4070-family/",
        verification="derived",
        notes="DERIVED: 60 SM x 512 FLOP/clk (GeForce FP32-acc) x 2.61 GHz; matches NVIDIA '641 AI TOPS' "
        "(INT8 sparse) / 2. GeForce: FP16/BF16/FP8 with FP32 accumulate at half the FP16-acc rate.",
    ),
    dict(
        id="rtx-5060-ti-16gb",
        name="NVIDIA GeForce RTX 5060 Ti 16GB",
        vendor="NVIDIA",
        hardware_class="geforce",
        architecture="Blackwell (GB206)",
        release_year=2025,
        aliases=["NVIDIA GeForce RTX 5060 Ti"],
        nominal_gb=16,
        memory_type="GDDR7 (28 Gbps, 128-bit)",
        memory_bandwidth_gb_s=448,
        fp32_tflops=23.7,
        fp16_tflops_dense=47.4,
        bf16_tflops_dense=47.4,
        fp8_tflops_dense=94.9,
        fp4_tflops_dense=379.5,
        tdp_w=180,
        pcie_gen=5,
        pcie_lanes=8,
        form_factor="partner cards only",
        launch_price_usd=429,
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5060-family/",
        verification="derived",
        notes="DERIVED from NVIDIA '759 AI TOPS' (FP4 sparse): FP4 dense 379.5; FP16 FP32-acc = FP4/8 "
        "(same ratio as RTX 5090: 3352 -> 209.5). PCIe 5.0 x8.",
    ),
    dict(
        id="rtx-4000-ada",
        name="NVIDIA RTX 4000 Ada Generation",
        vendor="NVIDIA",
        hardware_class="workstation",
        architecture="Ada Lovelace (AD104)",
        release_year=2023,
        aliases=["NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada"],
        nominal_gb=20,
        memory_type="GDDR6 ECC (160-bit)",
        memory_bandwidth_gb_s=360,
        fp32_tflops=26.7,
        fp16_tflops_dense=106.9,
        bf16_tflops_dense=106.9,
        fp8_tflops_dense=213.8,
        tdp_w=130,
        pcie_gen=4,
        pcie_lanes=16,
        form_factor="1-slot, active",
        slots=1,
        launch_price_usd=1250,
        source="https://www.nvidia.com/en-us/design-visualization/rtx-4000/ ; "
        "https://images.nvidia.com/aem-dam/en-zz/Solutions/technologies/NVIDIA-ADA-GPU-PROVIZ-Architecture-Whitepaper_1.1.pdf",
        verification="derived (SM count x Ada pro per-SM tensor rate x boost clock; NVIDIA's datasheet tensor "
        "figure does not reconcile and is not used)",
        notes="DERIVED: 48 SM (192 4th-gen Tensor Cores, datasheet) x 1024 dense FP16 FLOP/clk/SM with FP32 "
        "accumulate (pro Ada runs it at full rate: RTX 6000 Ada 364.2 = 142 SM x 1024 x 2.505 GHz, Ada pro "
        "whitepaper) x 2.175 GHz boost (NVIDIA's 26.7 TFLOPS FP32 = 6,144 cores x 2 x 2.175 GHz) = 106.9 "
        "TFLOPS FP16/BF16, FP8 213.8. The datasheet's 'Tensor Performance 327.6 TFLOPS' (FP8 with sparsity) "
        "is NOT used: /4 it would give 81.9 FP16 dense, implying a 1.67 GHz tensor clock, whereas the other "
        "Ada pro headlines equal SMs x 4096 x boost (RTX 5000 Ada 1,044.4 = 100 x 4096 x 2.55 GHz, RTX 6000 "
        "Ada 1,457 = 142 x 4096 x 2.505 GHz) and 48 x 4096 x 2.175 GHz = 427.6 - one digit from 327.6, most "
        "likely a typo. Datasheet text not re-read in-session.",
    ),
    dict(
        id="rtx-5000-ada",
        name="NVIDIA RTX 5000 Ada Generation",
        vendor="NVIDIA",
        hardware_class="workstation",
        architecture="Ada Lovelace (AD102)",
        release_year=2023,
        aliases=["NVIDIA RTX 5000 Ada Generation", "RTX 5000 Ada"],
        nominal_gb=32,
        memory_type="GDDR6 ECC (256-bit)",
        memory_bandwidth_gb_s=576,
        fp32_tflops=65.3,
        fp16_tflops_dense=261.1,
        bf16_tflops_dense=261.1,
        fp8_tflops_dense=522.2,
        tdp_w=250,
        pcie_gen=4,
        pcie_lanes=16,
        form_factor="2-slot, blower",
        slots=2,
        launch_price_usd=4000,
        source="https://www.nvidia.com/en-us/design-visualization/rtx-5000/",
        verification="derived",
        notes="DERIVED: NVIDIA headline 1,044.4 TFLOPS is FP8 sparse -> FP8 522.2 / FP16 261.1 dense "
        "(= 100 SM x 1024 FLOP/clk x 2.55 GHz). Pro Ada = full-rate FP32 accumulate.",
    ),
    dict(
        id="rx-9070-xt",
        name="AMD Radeon RX 9070 XT",
        vendor="AMD",
        hardware_class="amd",
        architecture="RDNA 4 (Navi 48)",
        release_year=2025,
        aliases=["AMD Radeon RX 9070 XT"],
        nominal_gb=16,
        memory_type="GDDR6 (20 Gbps, 256-bit)",
        memory_bandwidth_gb_s=640,
        fp32_tflops=48.7,
        fp16_tflops_dense=194.6,
        bf16_tflops_dense=194.6,
        tdp_w=304,
        pcie_gen=5,
        pcie_lanes=16,
        launch_price_usd=599,
        source="https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt.html",
        verification="derived",
        notes="DERIVED: AMD '1557 AI TOPS' is INT4 with sparsity; FP16 matrix dense = 1557/8. Unverified.",
    ),
    dict(
        id="rx-9070",
        name="AMD Radeon RX 9070",
        vendor="AMD",
        hardware_class="amd",
        architecture="RDNA 4 (Navi 48)",
        release_year=2025,
        aliases=["AMD Radeon RX 9070"],
        nominal_gb=16,
        memory_type="GDDR6 (20 Gbps, 256-bit)",
        memory_bandwidth_gb_s=640,
        fp32_tflops=36.1,
        fp16_tflops_dense=144.5,
        bf16_tflops_dense=144.5,
        tdp_w=220,
        pcie_gen=5,
        pcie_lanes=16,
        launch_price_usd=549,
        source="https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070.html",
        verification="derived",
        notes="DERIVED: AMD '1156 AI TOPS' (INT4 sparse) / 8. Unverified.",
    ),
    dict(
        id="radeon-ai-pro-r9700",
        name="AMD Radeon AI PRO R9700",
        vendor="AMD",
        hardware_class="amd",
        architecture="RDNA 4 (Navi 48)",
        release_year=2025,
        aliases=["AMD Radeon AI PRO R9700"],
        nominal_gb=32,
        memory_type="GDDR6 (20 Gbps, 256-bit)",
        memory_bandwidth_gb_s=640,
        fp32_tflops=47.8,
        fp16_tflops_dense=191.4,
        bf16_tflops_dense=191.4,
        tdp_w=300,
        pcie_gen=5,
        pcie_lanes=16,
        source="https://www.amd.com/en/products/graphics/workstations/radeon-ai-pro/ai-9000-series/"
        "amd-radeon-ai-pro-r9700.html",
        verification="derived",
        notes="DERIVED: AMD '1531 AI TOPS' (INT4 sparse) / 8. Unverified.",
    ),
    dict(
        id="arc-b580",
        name="Intel Arc B580",
        vendor="Intel",
        hardware_class="intel",
        architecture="Xe2-HPG Battlemage (BMG-G21)",
        release_year=2024,
        aliases=["Intel(R) Arc(TM) B580 Graphics", "Intel Arc B580"],
        nominal_gb=12,
        memory_type="GDDR6 (19 Gbps, 192-bit)",
        memory_bandwidth_gb_s=456,
        fp32_tflops=13.7,
        fp16_tflops_dense=116.5,
        int8_tops_dense=233,
        tdp_w=190,
        pcie_gen=4,
        pcie_lanes=8,
        launch_price_usd=249,
        source="https://www.intel.com/content/www/us/en/products/sku/241598/intel-arc-b580-graphics/"
        "specifications.html",
        verification="derived",
        notes="Intel quotes 233 INT8 TOPS (XMX, dense); FP16 = half. Unverified in-session.",
    ),
]


def num(s: str) -> float | None:
    """A CSV numeric cell: number, or None for blank / 'n/a'."""
    s = (s or "").strip()
    if not s or s.lower() in ("n/a", "na"):
        return None
    return float(s)


def slots_of(form_factor: str) -> float | None:
    """'2-slot (FE)' -> 2, '2.5-slot' -> 2.5, 'single slot' -> 1; modules -> None."""
    m = re.search(r"(\d(?:\.\d)?)-slot", form_factor)
    if m:
        return float(m.group(1))
    low = form_factor.lower()
    if "single slot" in low:
        return 1.0
    if "dual slot" in low:
        return 2.0
    return None


def reported_gib(nominal_gb: float, ecc: bool, hbm: bool) -> float:
    """Total memory (GiB) that NVML/nvidia-smi reports for an "N GB" GDDR/HBM device.

    Vendors' "N GB" of GDDR/HBM is N GiB of DRAM. GDDR parts that ship with ECC on (Tesla,
    A10/A40, L-series) keep check bits in-band, 1/16 of capacity (T4: 16 GiB -> 15360 MiB).
    The firmware then reserves ~12 MiB on GDDR (RTX 4090: 24564 MiB) and ~0.45 % on HBM
    (H100 80GB: 81559 MiB, H200: 143771 MiB). Fitted to the NVML_MIB values; expect +-1 %.
    """
    dram = nominal_gb * (15 / 16 if ecc else 1.0)
    return round(dram * (1 - 0.0045) if hbm else dram - 0.01, 2)


def memory_gib(gid: str, nominal_gb: float, ecc: bool, hbm: bool) -> float:
    """NVML total in GiB: the known nvidia-smi figure, else the documented rule."""
    if gid in NVML_MIB:
        return round(NVML_MIB[gid] / 1024, 2)
    return reported_gib(nominal_gb, ecc, hbm)


# Linux unified-memory SoCs (DGX Spark, Jetson): the OS, its desktop and the SoC's carveouts live in the same
# memory the GPU plans against, and no driver limit says how much is left (unlike Metal's working set on a Mac).
# Measured: on a DGX Spark (128 GB GB10, DGX OS) "the page cache was dropped before each start, leaving about 117 GiB
# available" (https://huggingface.co/nvidia/GLM-5.3-Flash-FP4-Local/discussions/7, 2026): 117 / 128 = 0.914 usable.
# On an 8 GB Orin Nano "the OS and runtime consume ~1.5-2 GB before inference begins"
# (https://edgeaistack.app/engines/memory-estimator): a fixed floor of 2 GiB, the larger share on small devices.
LINUX_UMA_USABLE_FRACTION = 117 / 128
LINUX_UMA_OS_MIN_GIB = 2.0
LINUX_UMA_IDS = ("dgx-spark", "jetson-agx-orin-64gb", "jetson-agx-thor", "jetson-orin-nano-super-8gb")


def linux_uma_usable_gib(total_gib: float) -> float:
    """Memory a workload may plan against on a Linux unified-memory SoC: the smaller of the DGX Spark's measured
    share and the total less the OS floor (see LINUX_UMA_USABLE_FRACTION)."""
    return round(min(total_gib * LINUX_UMA_USABLE_FRACTION, total_gib - LINUX_UMA_OS_MIN_GIB), 2)


def apple_usable_gib(total_gib: float) -> float:
    """Metal recommendedMaxWorkingSetSize default: 3/4 of RAM at >= 64 GB, 2/3 below (see module doc)."""
    return round(total_gib * (0.75 if total_gib >= 64 else 2 / 3), 2)


def hw_class(name: str, vendor: str) -> str:
    if vendor == "Apple":
        return "apple"
    if vendor.startswith("AMD"):
        return "amd"
    if vendor.startswith("Intel"):
        return "intel"
    if name.startswith("GeForce"):
        return "geforce"
    if name.startswith("RTX"):
        return "workstation"
    if "DGX Spark" in name or "Jetson" in name:
        return "other"
    return "datacenter"


def display_name(name: str, vendor: str) -> str:
    if name.startswith(("NVIDIA", "AMD", "Intel", "Apple")):
        return name
    prefix = {"NVIDIA": "NVIDIA", "AMD": "AMD", "Intel": "Intel", "Intel (Habana)": "Intel"}.get(
        vendor, vendor
    )
    return f"{prefix} {name}"


def from_csv_row(r: dict[str, str]) -> list[dict[str, Any]]:
    """One catalog entry per CSV row (Apple rows expand to one per GPU bin x memory config)."""
    if r["vendor"] == "Apple":
        return apple_entries(r)
    meta = CSV_META[r["name"]]
    per = int(meta.get("per_device", 1))
    nominal = float(r["memory_gb"]) / per
    gid = meta["id"]
    gib = memory_gib(gid, nominal, bool(meta.get("ecc")), "HBM" in r["memory_type"])

    def scaled(col: str) -> float | None:
        v = num(r[col])
        return None if v is None else round(v / per, 2)

    notes = r["notes"]
    if per > 1:
        notes = (
            f"Catalogued PER DEVICE: the board is {per} GPUs/GCDs that software sees separately; "
            f"memory, bandwidth, compute and power are the board figures / {per}. "
        ) + notes
    name = meta.get("name") or display_name(r["name"], r["vendor"])
    aliases = list(meta.get("aliases", []))
    entry = dict(
        id=gid,
        name=name,
        vendor="Intel" if r["vendor"].startswith("Intel") else r["vendor"],
        hardware_class=hw_class(r["name"], r["vendor"]),
        architecture=r["architecture"] or None,
        release_year=int(r["release_year"]) if r["release_year"] else None,
        aliases=aliases,
        nominal_gb=nominal,
        memory_gib=gib,
        memory_type=r["memory_type"] or None,
        memory_bandwidth_gb_s=scaled("memory_bandwidth_gb_s"),
        fp32_tflops=scaled("fp32_tflops"),
        fp16_tflops_dense=scaled("fp16_tensor_tflops_dense"),
        bf16_tflops_dense=scaled("bf16_tensor_tflops_dense"),
        fp8_tflops_dense=scaled("fp8_tensor_tflops_dense"),
        int8_tops_dense=scaled("int8_tensor_tops_dense"),
        tdp_w=scaled("tdp_w"),
        pcie_gen=int(num(r["pcie_gen"]) or 0) or None,
        pcie_lanes=int(num(r["pcie_lanes"]) or 0) or None,
        nvlink=None if r["nvlink"].lower().startswith("no") else r["nvlink"],
        nvlink_gb_s=meta.get("nvlink_gb_s"),
        nvlink_max_gpus=meta.get("nvlink_max_gpus"),
        form_factor=r["form_factor"] or None,
        slots=slots_of(r["form_factor"]),
        launch_price_usd=num(r["launch_price_usd"]),
        devices_per_board=per if per > 1 else None,
        source=r["source_url"],
        source_date=CSV_DATE,
        verification=f"{r['verification']} ({r['figure_basis']}; cross-check: {r['secondary_source']})",
        notes=notes + f" [from {REF_MD}]",
    )
    ov = CSV_OVERRIDES.get(gid)
    if ov is not None:
        entry.update(ov["set"])
        if ov["source"] not in entry["source"]:
            entry["source"] = f"{entry['source']} ; {ov['source']}"
        entry["verification"] = f"{ov['verification']}; table: {entry['verification']}"
        entry["notes"] = f"{ov['note']} {entry['notes']}"
    if entry["nvlink_max_gpus"] is None:
        entry.pop("nvlink_max_gpus")
    return [entry]


def apple_entries(r: dict[str, str]) -> list[dict[str, Any]]:
    """Expand one Apple chip row into GPU-bin x memory-config entries.

    Entries of the top GPU bin also get the alias '<chip> <N>GB', so a name without a core count
    resolves to the full chip (documented default). FP16 = FP32 SIMD rate (no matrix units).
    """
    chip = r["name"]
    spec = APPLE[chip]
    top_bin = max(spec["bins"])
    clock = APPLE_CLOCKS[spec["clock"]] if "clock" in spec else None
    source = r["source_url"] if clock is None else f"{r['source_url']} ; GPU clock: {clock[2]}"
    verification = f"{r['verification']} (memory configs / bin bandwidths: Apple tech specs)"
    if clock is not None:
        verification += "; compute DERIVED (cores x 128 ALUs x 2 x GPU clock; neither is an Apple TFLOPS figure)"
    out: list[dict[str, Any]] = []
    for cores, mems in spec["bins"].items():
        bw = spec.get("bw", {}).get(cores, float(r["memory_bandwidth_gb_s"]))
        tf: float | None = None
        if "tf_per_core" in spec:
            tf = round(spec["tf_per_core"] * cores, 2)
            tf_note = (
                "FP32/FP16 SIMD rate derived from Apple's quoted chip TFLOPS scaled by GPU cores "
                "(no matrix units; FP16 runs at the FP32 rate)."
            )
        elif clock is not None:
            tf = round(cores * 128 * 2 * clock[0] / 1000, 2)
            tf_note = (
                f"FP32/FP16 SIMD rate DERIVED: {cores} GPU cores x 128 FP32 ALUs x 2 FLOP (FMA) x {clock[0]:.3f} GHz "
                f"= {tf} TFLOPS (Apple publishes no TFLOPS for this family; no matrix units, FP16 runs at the "
                f"FP32 rate, so fp16_tflops_dense = fp32_tflops as for M1/M2). GPU clock: {clock[1]}."
            )
        else:
            tf_note = "Apple publishes no GPU TFLOPS for this family; compute left blank."
        for mem in mems:
            slug = chip.lower().replace(" ", "-")
            aliases = [f"{chip} {cores}-core GPU {mem}GB", f"{chip} {mem}GB {cores}-core"]
            if cores == top_bin:
                aliases.append(f"{chip} {mem}GB")
            out.append(
                dict(
                    id=f"{slug}-{cores}c-{mem}gb",
                    name=f"{chip} {cores}-core GPU {mem}GB",
                    vendor="Apple",
                    hardware_class="apple",
                    architecture=f"{r['architecture']} (Metal GPU family {spec['gpu_family']})",
                    release_year=int(r["release_year"]),
                    aliases=aliases,
                    nominal_gb=mem,
                    memory_gib=float(mem),
                    usable_memory_gib=apple_usable_gib(mem),
                    memory_type=r["memory_type"],
                    memory_bandwidth_gb_s=bw,
                    fp32_tflops=tf,
                    fp16_tflops_dense=tf,
                    form_factor=r["form_factor"],
                    source=source,
                    source_date=CSV_DATE,
                    verification=verification,
                    notes=(
                        f"{tf_note} usable_memory_gib = Metal recommendedMaxWorkingSetSize default "
                        f"({'3/4' if mem >= 64 else '2/3'} of RAM; raise with sysctl iogpu.wired_limit_mb). "
                        + r["notes"]
                        + f" [from {REF_MD}]"
                    ),
                )
            )
    return out


def from_extra(e: dict[str, Any]) -> dict[str, Any]:
    e = dict(e)
    ecc = bool(e.pop("ecc", False))
    hbm = "HBM" in (e.get("memory_type") or "")
    e.setdefault("memory_gib", memory_gib(e["id"], e["nominal_gb"], ecc, hbm))
    e.setdefault("source_date", TODAY)
    e.setdefault("slots", slots_of(e.get("form_factor") or ""))
    return e


def add_size_alias(g: dict[str, Any]) -> None:
    """Shops write 'RTX 4090 24GB': add '<short name> <N>GB' when the name lacks a size."""
    nominal = g.pop("nominal_gb")
    if re.search(r"\d+\s*GB", g["name"], re.I):
        return
    size = f"{nominal:g}GB"
    short = g["name"].replace("NVIDIA ", "").replace("GeForce ", "").replace("AMD ", "")
    for a in (f"{short} {size}",):
        if a not in g["aliases"]:
            g["aliases"].append(a)


def _extras_2026() -> Any:
    """scripts/gpu_extras_2026.py (loaded by path: tests load this script the same way)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_extras_2026", Path(__file__).with_name("gpu_extras_2026.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Streaming multiprocessors (GPU.sm_count), where a kernel's wave count is priced (performance.mlc_gemm_wave_util):
# NVIDIA's CUDA core counts / 128 FP32 cores per SM on Ampere GA10x and Ada (GA102 whitepaper v2 Appendix A: RTX 3090
# 10,496 cores = 82 SMs; RTX 3090 Ti 10,752 = 84 SMs (nvidia.com GeForce RTX 3090 Ti specs); Ada whitepaper v2.02
# Appendix A: RTX 4090 16,384 cores = 128 SMs). Others are not recorded yet.
SM_COUNTS = {"rtx-3090": 82, "rtx-3090-ti": 84, "rtx-4090": 128}


def with_sm_count(g: dict[str, Any]) -> dict[str, Any]:
    """The entry with `sm_count` after `tdp_w` where SM_COUNTS has it."""
    if g["id"] not in SM_COUNTS:
        return g
    out: dict[str, Any] = {}
    for k, v in g.items():
        out[k] = v
        if k == "tdp_w":
            out["sm_count"] = SM_COUNTS[g["id"]]
    out.setdefault("sm_count", SM_COUNTS[g["id"]])
    return out


def build(csv_path: Path) -> list[dict[str, Any]]:
    with csv_path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    gpus: list[dict[str, Any]] = []
    for r in rows:
        gpus.extend(from_csv_row(r))
    extras_2026 = _extras_2026()
    gpus.extend(apple_entries(extras_2026.APPLE_M5_ROW))
    gpus.extend(apple_entries(extras_2026.APPLE_M5_PRO_ROW))
    gpus.extend(apple_entries(extras_2026.APPLE_M5_MAX_ROW))
    have = {g["id"] for g in gpus}
    for e in [*EXTRAS, *extras_2026.EXTRAS_2026]:
        if e["id"] in have:
            raise SystemExit(f"EXTRAS entry {e['id']} duplicates a CSV row; drop it from EXTRAS")
        gpus.append(from_extra(e))
    for g in gpus:
        add_size_alias(g)
        if g.get("devices_per_board") is None:
            g.pop("devices_per_board", None)
    gpus = [with_sm_count(g) for g in gpus]
    for g in gpus:
        if g["id"] in LINUX_UMA_IDS and g.get("usable_memory_gib") is None:
            g["usable_memory_gib"] = linux_uma_usable_gib(g["memory_gib"])
            g["notes"] = ((g.get("notes") or "") + " usable_memory_gib: the OS, desktop and SoC carveouts share this "
                          "memory; the DGX Spark's measured 117 of 128 GB left (scripts/build_gpu_catalog.py "
                          "LINUX_UMA_USABLE_FRACTION), at least 2 GiB kept for the OS.").strip()
    ids = [g["id"] for g in gpus]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise SystemExit(f"duplicate ids: {sorted(dup)}")
    return gpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    gpus = build(args.csv)
    # Validate against the contract before writing.
    import sys

    sys.path.insert(0, str(ROOT))
    from mlrig.catalog.gpus import GPU

    for g in gpus:
        GPU.model_validate(g)
    args.out.write_text(json.dumps(gpus, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(gpus)} accelerators to {args.out}")


if __name__ == "__main__":
    main()
