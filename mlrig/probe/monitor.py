"""`mlrig monitor --prometheus PORT`: export GPU and host metrics for Prometheus.

GPU metric names, units and labels follow NVIDIA's DCGM exporter (dcgm-exporter default-counters.csv:
DCGM_FI_DEV_GPU_UTIL %, DCGM_FI_DEV_FB_USED/FREE MiB, DCGM_FI_DEV_POWER_USAGE W, DCGM_FI_DEV_GPU_TEMP °C,
DCGM_FI_DEV_SM_CLOCK/MEM_CLOCK MHz, DCGM_FI_PROF_PCIE_TX/RX_BYTES bytes/s; labels gpu, UUID,
modelName, Hostname) so existing Grafana dashboards work. Note: NVML's PCIe counter is a short
(~20 ms) sample, DCGM's a profiling average; the values are comparable in unit, not in smoothing.
Host metrics are ours, prefixed `mlrig_host_`.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from mlrig.errors import MlrigError
from mlrig.probe.devices import GpuBackend, GpuError
from mlrig.probe.host import HostSampler

_GPU_METRICS = [
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus (in bytes/s)."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus (in bytes/s)."),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons (bitmask, nvml.h)."),
]
_GPU_LABELS = ["gpu", "UUID", "modelName", "Hostname"]

MAX_CONNECTIONS = 16
"""Requests handled at once by `mlrig monitor` (a Prometheus server scrapes with one connection)."""
REQUEST_TIMEOUT_S = 10.0
"""Seconds a connection may take to send its request and receive the answer."""


def _prom() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:
        raise MlrigError("prometheus_client is not installed; run: pip install 'mlrig[monitor]'") from exc
    return prometheus_client


class MetricsExporter:
    """Owns a Prometheus registry; `update()` reads the backend and host once."""

    def __init__(self, backend: GpuBackend, host: HostSampler, hostname: str | None = None) -> None:
        pc = _prom()
        self.backend, self.host = backend, host
        self.hostname = hostname or socket.gethostname()
        self.registry = pc.CollectorRegistry()
        self.gpu_ok = True
        G = pc.Gauge
        self.gpu = {n: G(n, h, _GPU_LABELS, registry=self.registry) for n, h in _GPU_METRICS}
        r = self.registry
        self.cpu = G("mlrig_host_cpu_percent", "CPU utilisation per logical CPU (in %).", ["cpu"], registry=r)
        self.cpu_mean = G("mlrig_host_cpu_percent_mean", "CPU utilisation, mean over CPUs (in %).", registry=r)
        self.iowait = G("mlrig_host_iowait_percent", "Time idle with I/O outstanding (in %).", registry=r)
        self.ram_used = G("mlrig_host_memory_used_bytes", "RAM in use (total - available).", registry=r)
        self.ram_total = G("mlrig_host_memory_total_bytes", "RAM installed.", registry=r)
        self.swap_used = G("mlrig_host_swap_used_bytes", "Swap in use.", registry=r)
        self.disk_r = G("mlrig_host_disk_read_bytes_per_second", "Disk read rate, all disks.", registry=r)
        self.disk_w = G("mlrig_host_disk_write_bytes_per_second", "Disk write rate, all disks.", registry=r)
        self.up = G("mlrig_gpu_sampling_up", "1 while GPU sampling works, 0 after an NVML error.", registry=r)

    def update(self) -> None:
        gpus = []
        if self.gpu_ok:
            try:
                gpus = self.backend.sample()
            except GpuError:
                self.gpu_ok = False
        self.up.set(1 if self.gpu_ok else 0)
        for g in gpus:
            lab = {"gpu": str(g.index), "UUID": g.uuid or "", "modelName": g.name, "Hostname": self.hostname}
            mib = 2**20
            values = {
                "DCGM_FI_DEV_GPU_UTIL": g.util_percent,
                "DCGM_FI_DEV_FB_USED": None if g.memory_used_bytes is None else g.memory_used_bytes / mib,
                "DCGM_FI_DEV_FB_FREE": (None if g.memory_used_bytes is None or g.memory_total_bytes is None
                                        else (g.memory_total_bytes - g.memory_used_bytes) / mib),
                "DCGM_FI_DEV_POWER_USAGE": g.power_w,
                "DCGM_FI_DEV_GPU_TEMP": g.temperature_c,
                "DCGM_FI_DEV_SM_CLOCK": g.sm_clock_mhz,
                "DCGM_FI_DEV_MEM_CLOCK": g.mem_clock_mhz,
                "DCGM_FI_PROF_PCIE_TX_BYTES": None if g.pcie_tx_kb_s is None else g.pcie_tx_kb_s * 1000,
                "DCGM_FI_PROF_PCIE_RX_BYTES": None if g.pcie_rx_kb_s is None else g.pcie_rx_kb_s * 1000,
                "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": g.throttle_reasons,
            }
            for name, v in values.items():
                if v is not None:
                    self.gpu[name].labels(**lab).set(v)
        h = self.host.sample()
        for i, pct in enumerate(h.cpu_percent_per_core):
            self.cpu.labels(cpu=str(i)).set(pct)
        self.cpu_mean.set(h.cpu_percent_mean)
        if h.iowait_percent is not None:
            self.iowait.set(h.iowait_percent)
        self.ram_used.set(h.ram_used_bytes)
        self.ram_total.set(h.ram_total_bytes)
        self.swap_used.set(h.swap_used_bytes)
        self.disk_r.set(h.disk_read_bytes_s)
        self.disk_w.set(h.disk_write_bytes_s)

    def exposition(self) -> str:
        return str(_prom().generate_latest(self.registry).decode())

    def serve(self, port: int, host: str = "127.0.0.1", max_connections: int = MAX_CONNECTIONS) -> tuple[Any, Any]:
        """Start the HTTP server in a thread; returns (server, thread). `server.shutdown()` stops it.

        Bounded, unlike prometheus_client's `start_http_server` (one thread per connection, no cap):
        at most `max_connections` requests are handled at once (a semaphore taken before a handler
        thread starts; a connection over the cap is closed at once, and Prometheus retries on its
        next scrape), and each connection gets `REQUEST_TIMEOUT_S` to send its request, so idle or
        slow clients cannot hold threads."""
        import threading

        server_cls = _bounded_server_class(_prom(), max_connections)
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            server = server_cls((host, port), _handler_class(_prom(), self.registry), family)
        except OSError as exc:
            raise MlrigError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --prometheus port") \
                from None
        thread = threading.Thread(target=server.serve_forever, name="mlrig-monitor-http", daemon=True)
        thread.start()
        return server, thread


def _handler_class(pc: Any, registry: Any) -> Any:
    base = pc.exposition.MetricsHandler.factory(registry)

    class Handler(base):  # type: ignore[misc,valid-type]
        timeout = REQUEST_TIMEOUT_S  # socket timeout for reading the request (StreamRequestHandler)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _bounded_server_class(pc: Any, max_connections: int) -> Any:
    import threading
    from http.server import ThreadingHTTPServer

    class BoundedServer(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def __init__(self, address: tuple[str, int], handler: Any, family: int) -> None:
            self.address_family = family
            self.slots = threading.BoundedSemaphore(max_connections)
            super().__init__(address, handler)

        def process_request(self, request: Any, client_address: Any) -> None:
            if not self.slots.acquire(blocking=False):  # over the cap: close, never queue a thread
                self.shutdown_request(request)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:
                self.slots.release()
                raise

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                self.slots.release()

    return BoundedServer


def run_monitor(port: int, host: str = "127.0.0.1", interval_s: float = 5.0,
                backend: GpuBackend | None = None, log: Any = None) -> None:
    """Serve until Ctrl-C, updating every `interval_s`."""
    from mlrig.errors import require_positive
    from mlrig.probe.devices import default_backend
    from mlrig.probe.host import PsutilHostSampler

    require_positive("--interval", interval_s, maximum=3600)
    if not 0 <= port <= 65535:
        raise MlrigError(f"--prometheus port {port} is out of range; use 1-65535")
    exp = MetricsExporter(backend or default_backend(), PsutilHostSampler())
    server, _ = exp.serve(port, host)
    if log:
        log(f"serving http://{host}:{server.server_port}/metrics every {interval_s:g} s "
            f"({len(exp.backend.devices())} GPU(s)); Ctrl-C to stop")
    try:
        while True:
            exp.update()
            time.sleep(interval_s)
    finally:
        server.shutdown()
        exp.backend.close()
