"""Detect what the machine is: CPU, RAM, GPUs (NVIDIA via the backend, AMD, Apple), disks.

Everything is best effort: a fact that cannot be read is None with a note, never an exception.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from mlrig.probe.devices import GpuBackend
from mlrig.probe.models import CpuInfo, DiskInfo, GpuInfo, MemoryInfo


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _run(cmd: list[str], timeout_s: float = 5.0) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def parse_cache_size(text: str) -> int | None:
    """'32768K' / '2 MiB' / '512 KB' -> bytes (sysfs and lscpu use binary units)."""
    m = re.match(r"\s*([\d.]+)\s*([KMG]?)", text, re.I)
    if not m:
        return None
    mult = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2).upper()]
    return int(float(m.group(1)) * mult)


def _sys_caches(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> dict[str, int]:
    """Cache sizes from sysfs: {'l1d': bytes, 'l2': ..., 'l3': ...} (per instance)."""
    out: dict[str, int] = {}
    for d in sorted(root.glob("index*")):
        level, ctype, size = _read(d / "level"), _read(d / "type"), _read(d / "size")
        if not level or not size or ctype == "Instruction":
            continue
        key = "l1d" if level == "1" else f"l{level}"
        b = parse_cache_size(size)
        if b:
            out[key] = b
    return out


def parse_cpuinfo(text: str) -> tuple[str, str | None, int | None]:
    """(model name, vendor, physical cores) from /proc/cpuinfo."""
    model = vendor = None
    cores: set[tuple[str, str]] = set()
    phys = core = ""
    for line in text.splitlines():
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "model name" and model is None:
            model = v
        elif k == "vendor_id" and vendor is None:
            vendor = v
        elif k == "physical id":
            phys = v
        elif k == "core id":
            core = v
            cores.add((phys, core))
    return model or platform.processor() or "unknown", vendor, len(cores) or None


def fp32_flop_per_cycle(flags: set[str], vendor: str | None = None) -> int | None:
    """FP32 FLOP per cycle per core from the CPU's feature flags, as the catalog's cpu-* hosts count them (2 FMA
    pipes x vector lanes x 2): AVX-512 64 (two 512-bit FMA pipes: Zen 5, Sapphire Rapids; catalog cpu-ddr5-2ch and
    cpu-xeon-spr-8ch), except AMD's Zen 4, whose AVX-512 runs on its two 256-bit pipes (32, catalog
    cpu-epyc-genoa-12ch; told from Zen 5 by the AVX-VNNI that Zen 5 added); AVX2 + FMA 32 (two 256-bit pipes,
    Haswell on / Zen 2-3), AVX 16, SSE2 8; Arm NEON (asimd) 16 (two 128-bit FMA pipes; Neoverse V2's four are
    counted as two). None for flags it does not know."""
    if "avx512f" in flags:
        return 32 if (vendor or "") == "AuthenticAMD" and "avx_vnni" not in flags else 64
    if "avx2" in flags and "fma" in flags:
        return 32
    if "avx" in flags:
        return 16
    if "asimd" in flags:
        return 16
    if "sse2" in flags:
        return 8
    return None


def parse_cpu_flags_and_clock(text: str) -> tuple[set[str], float | None]:
    """(feature flags, clock in MHz) of the first CPU in /proc/cpuinfo ('flags' on x86, 'Features' on Arm)."""
    flags: set[str] = set()
    mhz = None
    for line in text.splitlines():
        k, _, v = line.partition(":")
        k = k.strip()
        if k in ("flags", "Features") and not flags:
            flags = set(v.split())
        elif k == "cpu MHz" and mhz is None and v.replace(".", "", 1).isdigit():
            mhz = float(v)
    return flags, mhz


def _cpufreq_mhz() -> float | None:
    """The CPU's base clock (Intel's base_frequency) or its top one (cpuinfo_max_freq), kHz in sysfs."""
    root = Path("/sys/devices/system/cpu/cpu0/cpufreq")
    for name in ("base_frequency", "cpuinfo_max_freq"):
        v = _read(root / name)
        if v and v.strip().isdigit():
            return int(v.strip()) / 1e3
    return None


def detect_cpu() -> CpuInfo:
    logical = os.cpu_count() or 1
    if platform.system() == "Darwin":
        brand = (_run(["sysctl", "-n", "machdep.cpu.brand_string"]) or "").strip() or platform.machine()
        phys = (_run(["sysctl", "-n", "hw.physicalcpu"]) or "").strip()
        l2 = (_run(["sysctl", "-n", "hw.l2cachesize"]) or "").strip()
        return CpuInfo(model=brand, vendor="Apple" if "Apple" in brand else None,
                       physical_cores=int(phys) if phys.isdigit() else None, logical_cpus=logical,
                       l2_bytes=int(l2) if l2.isdigit() else None, source="sysctl")
    text = _read("/proc/cpuinfo") or ""
    model, vendor, phys_cores = parse_cpuinfo(text)
    flags, mhz = parse_cpu_flags_and_clock(text)
    caches = _sys_caches()
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or 1
    l3 = caches.get("l3")
    if l3:  # sysfs gives one instance; count distinct L3 domains across CPUs
        ids = {_read(p) for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cache/index3/id")}
        l3 *= max(1, len(ids - {None}))
    return CpuInfo(model=model, vendor=vendor, physical_cores=phys_cores, logical_cpus=logical,
                   l1d_bytes=caches.get("l1d"), l2_bytes=caches.get("l2"), l3_bytes=l3, numa_nodes=nodes,
                   fp32_flop_per_cycle=fp32_flop_per_cycle(flags, vendor), clock_mhz=_cpufreq_mhz() or mhz,
                   source="/proc/cpuinfo, /sys/devices/system/cpu/*/cache, /sys/devices/system/node")


def parse_dmidecode_speed(text: str) -> int | None:
    """Fastest 'Configured Memory Speed' (else 'Speed') in MT/s from `dmidecode -t memory`."""
    best = None
    for key in ("Configured Memory Speed", "Configured Clock Speed", "Speed"):
        vals = [int(m) for m in re.findall(rf"^\s*{key}:\s*(\d+)\s*MT/s", text, re.M)]
        if vals:
            best = max(vals)
            break
    return best


def detect_memory() -> MemoryInfo:
    import psutil

    total = int(psutil.virtual_memory().total)
    info = MemoryInfo(total_bytes=total, total_gib=round(total / 2**30, 2))
    if platform.system() == "Linux" and os.geteuid() == 0:
        text = _run(["dmidecode", "-t", "memory"])
        speed = parse_dmidecode_speed(text) if text else None
        if speed:
            info.speed_mt_s, info.speed_source = speed, "dmidecode -t memory"
    return info


def detect_disks() -> list[DiskInfo]:
    """Mounted block devices with their kind (from /sys/block/*/queue/rotational) and free space."""
    import psutil

    out: list[DiskInfo] = []
    seen: set[str] = set()
    for part in psutil.disk_partitions(all=False):
        if not part.device.startswith("/dev/") or part.device in seen:
            continue
        seen.add(part.device)
        try:
            use = psutil.disk_usage(part.mountpoint)
        except OSError:
            continue
        dev = Path(part.device).name
        base = re.sub(r"(p?\d+)$", "", dev) if not dev.startswith("nvme") else re.sub(r"p\d+$", "", dev)
        rot = _read(f"/sys/block/{base}/queue/rotational")
        kind = "nvme" if dev.startswith("nvme") else {"0": "ssd", "1": "hdd"}.get(rot or "", "unknown")
        src = f"/sys/block/{base}/queue/rotational={rot}" if rot is not None else "not readable"
        if base.startswith(("vd", "xvd")):
            kind = "unknown"
            src += " (virtual disk: the flag says nothing about the storage behind it)"
        out.append(DiskInfo(device=part.device, mountpoint=part.mountpoint, kind=kind,
                            total_bytes=int(use.total), free_bytes=int(use.free),
                            free_gib=round(use.free / 2**30, 2), kind_source=src))
    return out


def map_to_catalog(name: str) -> tuple[str | None, str | None]:
    """(catalog id, note) for a device name via mlrig.catalog.gpus.resolve_gpu; errors become a note."""
    try:
        from mlrig.catalog.gpus import resolve_gpu

        return resolve_gpu(name).id, None
    except Exception as exc:  # unknown/ambiguous name, or the catalog not available yet
        return None, f"not mapped to the catalog: {exc}"


def detect_nvidia(backend: GpuBackend) -> list[GpuInfo]:
    out = []
    for d in backend.devices():
        cid, note = map_to_catalog(d.name)
        out.append(GpuInfo(index=d.index, vendor=d.vendor, name=d.name, uuid=d.uuid,
                           memory_total_bytes=d.memory_total_bytes, driver_version=d.driver_version,
                           cuda_version=d.cuda_version, pcie_gen_max=d.pcie_gen_max,
                           pcie_width_max=d.pcie_width_max, power_limit_w=d.power_limit_w,
                           catalog_id=cid, catalog_note=note, source="NVML"))
    return out


def detect_amd() -> list[GpuInfo]:
    """AMD GPUs via `rocm-smi --showproductname --showmeminfo vram --json` (amdsmi is not required)."""
    text = _run(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"])
    if not text:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out = []
    for i, (_card, v) in enumerate(sorted(data.items())):
        if not isinstance(v, dict):
            continue
        name = v.get("Card Series") or v.get("Card series") or v.get("Card model") or "AMD GPU"
        total = v.get("VRAM Total Memory (B)")
        cid, note = map_to_catalog(str(name))
        out.append(GpuInfo(index=i, vendor="AMD", name=str(name),
                           memory_total_bytes=int(total) if total else None,
                           catalog_id=cid, catalog_note=note, source="rocm-smi --json"))
    return out


def detect_apple() -> list[GpuInfo]:
    """Apple Silicon GPU via system_profiler; memory is the unified RAM (hw.memsize)."""
    if platform.system() != "Darwin":
        return []
    text = _run(["system_profiler", "SPDisplaysDataType", "-json"], timeout_s=15)
    mem = (_run(["sysctl", "-n", "hw.memsize"]) or "").strip()
    if not text:
        return []
    try:
        items = json.loads(text).get("SPDisplaysDataType", [])
    except ValueError:
        return []
    out = []
    for i, it in enumerate(items):
        name = it.get("sppci_model") or it.get("_name") or "Apple GPU"
        cores = it.get("sppci_cores")
        cid, note = map_to_catalog(str(name))
        out.append(GpuInfo(index=i, vendor="Apple", name=f"{name}" + (f" ({cores}-core GPU)" if cores else ""),
                           memory_total_bytes=int(mem) if mem.isdigit() else None,
                           catalog_id=cid, catalog_note=note,
                           source="system_profiler SPDisplaysDataType; unified memory from sysctl hw.memsize"))
    return out
