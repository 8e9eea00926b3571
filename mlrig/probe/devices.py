"""GPU access behind one small interface (`GpuBackend`), so probing and diagnosis run without a GPU.

Implementations:
- `NvmlBackend`: NVIDIA's NVML through `pynvml` (package `nvidia-ml-py`), imported lazily. If the
  library is absent or `nvmlInit` fails, it reports no GPUs; it never raises at construction.
- `RecordedBackend`: replays readings recorded as JSON (tests/fixtures/nvml/*.json); it can be told
  to fail after N samples, as a GPU that falls off the bus does (NVML_ERROR_GPU_IS_LOST).
- `NullBackend`: no GPUs.

Units follow NVML where it is unambiguous and are converted where it is not: NVML reports power in
milliwatts (we give W) and PCIe throughput in KB/s (we keep KB/s = 1000 bytes/s, as NVML's docs say
"KB/s"; see nvmlDeviceGetPcieThroughput in the NVML API reference).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

# Clock throttle ("clocks event") reason bits, from nvml.h (nvmlClocksThrottleReason*).
THROTTLE_GPU_IDLE = 0x1
THROTTLE_APP_CLOCKS = 0x2
THROTTLE_SW_POWER_CAP = 0x4
THROTTLE_HW_SLOWDOWN = 0x8
THROTTLE_SYNC_BOOST = 0x10
THROTTLE_SW_THERMAL = 0x20
THROTTLE_HW_THERMAL = 0x40
THROTTLE_HW_POWER_BRAKE = 0x80
THROTTLE_DISPLAY_CLOCKS = 0x100

THERMAL_BITS = THROTTLE_SW_THERMAL | THROTTLE_HW_THERMAL
POWER_BITS = THROTTLE_SW_POWER_CAP | THROTTLE_HW_POWER_BRAKE

THROTTLE_NAMES = {
    THROTTLE_GPU_IDLE: "gpu_idle",
    THROTTLE_APP_CLOCKS: "applications_clocks",
    THROTTLE_SW_POWER_CAP: "sw_power_cap",
    THROTTLE_HW_SLOWDOWN: "hw_slowdown",
    THROTTLE_SYNC_BOOST: "sync_boost",
    THROTTLE_SW_THERMAL: "sw_thermal",
    THROTTLE_HW_THERMAL: "hw_thermal",
    THROTTLE_HW_POWER_BRAKE: "hw_power_brake",
    THROTTLE_DISPLAY_CLOCKS: "display_clocks",
}


def throttle_names(mask: int | None) -> list[str]:
    """Names of the set throttle-reason bits (nvml.h nvmlClocksThrottleReason* constants)."""
    if not mask:
        return []
    return [name for bit, name in THROTTLE_NAMES.items() if mask & bit]


class GpuError(RuntimeError):
    """The device stopped answering (NVML error, GPU lost, driver unloaded)."""


class GpuDevice(BaseModel):
    """Static facts about one device."""

    index: int
    name: str
    uuid: str | None = None
    vendor: str = "NVIDIA"
    memory_total_bytes: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    power_limit_w: float | None = None
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None


class GpuSample(BaseModel):
    """One reading of one device. Every field is optional: NVML returns NOT_SUPPORTED on many cards."""

    index: int
    name: str = ""
    uuid: str | None = None
    util_percent: float | None = None  # % of time a kernel ran over the last sample period
    mem_util_percent: float | None = None  # % of time device memory was read/written
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    pcie_rx_kb_s: float | None = None  # host -> device, KB/s (1000 B/s), NVML
    pcie_tx_kb_s: float | None = None  # device -> host
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    temperature_c: float | None = None
    throttle_reasons: int | None = None  # bitmask, see THROTTLE_* above
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None

    @property
    def memory_used_fraction(self) -> float | None:
        if self.memory_used_bytes is None or not self.memory_total_bytes:
            return None
        return self.memory_used_bytes / self.memory_total_bytes


@runtime_checkable
class GpuBackend(Protocol):
    """The one interface probing, diagnosis and monitoring use to read GPUs."""

    def devices(self) -> list[GpuDevice]: ...

    def sample(self) -> list[GpuSample]:
        """Read every device now; raise `GpuError` if a device stopped answering."""
        ...

    def close(self) -> None: ...


class NullBackend:
    """No GPUs (no driver, or NVML not installed)."""

    def __init__(self, reason: str = "no GPU backend") -> None:
        self.reason = reason

    def devices(self) -> list[GpuDevice]:
        return []

    def sample(self) -> list[GpuSample]:
        return []

    def close(self) -> None:
        pass


def _call(fn: Any, *args: Any) -> Any:
    """Call an NVML getter; NOT_SUPPORTED and friends become None, GPU_IS_LOST becomes GpuError."""
    import pynvml

    try:
        return fn(*args)
    except pynvml.NVMLError as exc:
        lost = {getattr(pynvml, n, -1) for n in ("NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_UNINITIALIZED",
                                                  "NVML_ERROR_DRIVER_NOT_LOADED")}
        if getattr(exc, "value", None) in lost:
            raise GpuError(f"NVML: {exc}") from exc
        return None


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)


class NvmlBackend:
    """NVIDIA GPUs through NVML. Construct with `NvmlBackend.open()`; falls back to no devices."""

    def __init__(self, handles: list[Any], reason: str = "") -> None:
        self._handles = handles
        self.reason = reason
        self._devices: list[GpuDevice] | None = None

    @classmethod
    def open(cls) -> NvmlBackend:
        try:
            import pynvml
        except ImportError:
            return cls([], "nvidia-ml-py not installed (pip install 'mlrig[probe]')")
        try:
            pynvml.nvmlInit()
            n = pynvml.nvmlDeviceGetCount()
            return cls([pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)])
        except Exception as exc:  # no driver, no device, container without /dev/nvidia*
            return cls([], f"NVML unavailable: {exc}")

    def devices(self) -> list[GpuDevice]:
        if self._devices is not None:
            return self._devices
        if not self._handles:
            self._devices = []
            return self._devices
        import pynvml as nv

        driver = _text(_call(nv.nvmlSystemGetDriverVersion))
        cuda_int = _call(nv.nvmlSystemGetCudaDriverVersion)
        cuda = f"{cuda_int // 1000}.{(cuda_int % 1000) // 10}" if isinstance(cuda_int, int) else None
        out = []
        for i, h in enumerate(self._handles):
            mem = _call(nv.nvmlDeviceGetMemoryInfo, h)
            limit_mw = _call(nv.nvmlDeviceGetEnforcedPowerLimit, h)
            out.append(GpuDevice(
                index=i, name=_text(_call(nv.nvmlDeviceGetName, h)) or f"GPU {i}",
                uuid=_text(_call(nv.nvmlDeviceGetUUID, h)),
                memory_total_bytes=int(mem.total) if mem is not None else None,
                driver_version=driver, cuda_version=cuda,
                power_limit_w=limit_mw / 1000 if limit_mw is not None else None,
                sm_clock_max_mhz=_call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
                mem_clock_max_mhz=_call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
                pcie_gen_max=_call(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
                pcie_width_max=_call(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
            ))
        self._devices = out
        return out

    def sample(self) -> list[GpuSample]:
        if not self._handles:
            return []
        import pynvml as nv

        try:
            devs = self.devices()
            out = []
            for d, h in zip(devs, self._handles, strict=True):
                util = _call(nv.nvmlDeviceGetUtilizationRates, h)
                mem = _call(nv.nvmlDeviceGetMemoryInfo, h)
                power = _call(nv.nvmlDeviceGetPowerUsage, h)
                reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                    nv.nvmlDeviceGetCurrentClocksThrottleReasons
                out.append(GpuSample(
                    index=d.index, name=d.name, uuid=d.uuid,
                    util_percent=util.gpu if util is not None else None,
                    mem_util_percent=util.memory if util is not None else None,
                    memory_used_bytes=int(mem.used) if mem is not None else None,
                    memory_total_bytes=int(mem.total) if mem is not None else None,
                    pcie_rx_kb_s=_call(nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_RX_BYTES),
                    pcie_tx_kb_s=_call(nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_TX_BYTES),
                    power_w=power / 1000 if power is not None else None,
                    power_limit_w=d.power_limit_w,
                    sm_clock_mhz=_call(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
                    mem_clock_mhz=_call(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
                    sm_clock_max_mhz=d.sm_clock_max_mhz,
                    temperature_c=_call(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                    throttle_reasons=_call(reasons_fn, h),
                    pcie_gen=_call(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
                    pcie_width=_call(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
                    pcie_gen_max=d.pcie_gen_max, pcie_width_max=d.pcie_width_max,
                ))
            return out
        except GpuError:
            raise
        except Exception as exc:  # anything else from the driver mid-run
            raise GpuError(f"NVML: {exc}") from exc

    def close(self) -> None:
        if self._handles:
            try:
                import pynvml

                pynvml.nvmlShutdown()
            except Exception:
                pass
            self._handles = []


class Recording(BaseModel):
    """A recorded run: device facts plus a timeline of GPU and host readings (tests/fixtures/nvml)."""

    description: str = ""
    source: str = ""  # how the readings were obtained
    expect: list[str] = Field(default_factory=list)  # finding kinds a correct classifier must report
    interval_s: float = 1.0
    fail_after: int | None = None  # the backend raises GpuError from this sample index on
    devices: list[GpuDevice] = Field(default_factory=list)
    samples: list[dict[str, Any]] = Field(default_factory=list)  # {"gpus": [...], "host": {...}}


def load_recording(path: str | Path) -> Recording:
    return Recording.model_validate(json.loads(Path(path).read_text()))


class RecordedBackend:
    """Replays the GPU part of a `Recording`, one sample per call; the last one repeats at the end."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> RecordedBackend:
        return cls(load_recording(path))

    def devices(self) -> list[GpuDevice]:
        return list(self.recording.devices)

    def sample(self) -> list[GpuSample]:
        i = self.calls
        self.calls += 1
        fail = self.recording.fail_after
        if fail is not None and i >= fail:
            raise GpuError("NVML: GPU is lost (recorded: NVML_ERROR_GPU_IS_LOST)")
        samples = self.recording.samples
        if not samples:
            return []
        raw = samples[min(i, len(samples) - 1)].get("gpus", [])
        return [GpuSample.model_validate(g) for g in raw]

    def close(self) -> None:
        pass


def default_backend() -> GpuBackend:
    """NVML if it answers, else no GPUs."""
    return NvmlBackend.open()
