"""V100 came as SXM2 (16/32 GB), SXM3 (32 GB, DGX-2) and PCIe (16/32 GB) boards: a name that fits several lists
every one of them, and "SXM" alone never silently means SXM3."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.errors import AmbiguousNameError


def test_v100_32gb_lists_all_three_32gb_boards() -> None:
    with pytest.raises(AmbiguousNameError) as e:
        resolve_gpu("V100 32GB")
    assert sorted(e.value.candidates) == ["v100-pcie-32gb", "v100-sxm2-32gb", "v100-sxm3-32gb"]
    assert "NVIDIA Tesla V100 SXM3 32GB" in str(e.value)  # each id with its name, to choose by


def test_v100_sxm_is_not_taken_as_sxm3() -> None:
    # was v100-sxm3-32gb, silently: "sxm3" was split into "sxm" + "3" while "sxm2" stayed whole
    with pytest.raises(AmbiguousNameError) as e:
        resolve_gpu("V100 SXM")
    assert sorted(e.value.candidates) == ["v100-sxm2-16gb", "v100-sxm2-32gb", "v100-sxm3-32gb"]
    assert resolve_gpu("V100 SXM 16GB").id == "v100-sxm2-16gb"  # was an unknown GPU


@pytest.mark.parametrize(("name", "gid"), [("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),
                                           ("Tesla V100-PCIE-32GB", "v100-pcie-32gb"),
                                           ("V100 SXM3", "v100-sxm3-32gb"), ("A100 SXM4 80GB", "a100-sxm-80gb"),
                                           ("H100 SXM", "h100-sxm-80gb")])
def test_nvidia_smi_and_board_names_still_resolve(name: str, gid: str) -> None:
    assert resolve_gpu(name).id == gid


def test_an_unknown_gpu_names_gpu_spec_as_the_fix() -> None:
    from mlrig.errors import UnknownNameError

    with pytest.raises(UnknownNameError) as e:
        resolve_gpu("GTX 1080 Ti")  # not in the catalog
    assert "--gpu-spec memory_gib=" in str(e.value) and "mlrig gpus --search" in str(e.value)
