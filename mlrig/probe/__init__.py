"""`mlrig probe` / `monitor`: what this machine is and what it measures, behind one GPU interface.

Public API:
- `probe(directory, quick=...) -> MachineProfile` detect + measure;
- `latest_profile() -> MachineProfile | None` newest saved probe of this host (SQLite history);
- `profile_to_gpu_overrides(profile, index=0) -> dict` catalog GPU fields measured on this machine;
- `MachineProfile.host_memory_bandwidth_gb_s` measured STREAM triad, for CPU-offload estimates.
"""

from mlrig.probe.history import latest_profile, list_profiles, save_profile
from mlrig.probe.models import MachineProfile
from mlrig.probe.run import probe, profile_to_gpu_overrides

__all__ = ["MachineProfile", "latest_profile", "list_profiles", "probe", "profile_to_gpu_overrides",
           "save_profile"]
