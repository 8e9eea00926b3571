from __future__ import annotations

import pytest

from mlrig.catalog.interconnects import (
    allreduce_time_s,
    default_link,
    load_interconnects,
    pcie_x16_link,
    resolve_interconnect,
)
from mlrig.errors import MlrigError


def test_catalog_has_sources_and_names_resolve() -> None:
    links = load_interconnects()
    assert all(x.source and x.source_date for x in links)
    assert resolve_interconnect("pcie4").bandwidth_gb_s == pytest.approx(31.5)
    assert resolve_interconnect("PCIe 5.0 x16").bandwidth_gb_s == pytest.approx(63.0)
    assert resolve_interconnect("nvlink").bandwidth_gb_s == 450
    assert resolve_interconnect("ib-ndr").bandwidth_gb_s == 50
    assert resolve_interconnect("nvlink-3090-bridge").bandwidth_gb_s == pytest.approx(56.25)
    with pytest.raises(MlrigError):
        resolve_interconnect("carrier-pigeon")


def test_default_link_and_ring_allreduce() -> None:
    assert default_link(4, None, 2).id == "pcie4-x16"
    assert default_link(5, 450.0, 8).kind == "nvlink"
    assert default_link(5, 450.0, 1).kind == "pcie"
    link = resolve_interconnect("pcie4")
    # 1 GB over 4 ranks: 2*3/4 GB at 31.5 GB/s + 6 x 12 us
    assert allreduce_time_s(1e9, 4, link) == pytest.approx(1.5e9 / 31.5e9 + 6 * 12e-6)
    assert allreduce_time_s(1e9, 1, link) == 0.0


def test_peer_to_peer_allreduce_latency_does_not_grow_with_ranks() -> None:
    """An engine's own NVLink all-reduce takes 2 hops of latency at any rank count; a ring takes 2(N-1)."""
    link = resolve_interconnect("nvlink3")  # A100 SXM: 300 GB/s per direction, 6 us per hop
    small = 2.0 * 4096  # one decode token's hidden state in bf16
    for ranks in (2, 4, 8):
        ring = allreduce_time_s(small, ranks, link)
        p2p = allreduce_time_s(small, ranks, link, peer_to_peer=True)
        wire = 2 * (ranks - 1) / ranks * small / 300e9
        assert p2p == pytest.approx(2 * 6e-6 + wire) and ring == pytest.approx(2 * (ranks - 1) * 6e-6 + wire)
        assert p2p <= ring
    assert allreduce_time_s(small, 2, link, peer_to_peer=True) == allreduce_time_s(small, 2, link)


def test_gpt_fast_tensor_parallel_decode_keeps_scaling_to_8_gpus() -> None:
    """gpt-fast's README table (GPTFAST-0009..0011): Llama-2-7B bf16 on 2 / 4 / 8 A100s decodes at 169 / 254
    / 328 tok/s, each step faster than the last; a ring's growing latency had 8 GPUs slower than 4."""
    from mlrig.planner import evaluate

    speeds = [evaluate({"model": "llama-2-7b", "workload": {"engine": "gpt-fast", "output_tokens": 200,
                                                            "prompt_tokens": 5},
                        "hardware": {"gpu": "A100 SXM4 80GB", "count": n, "tensor_parallel": n}}).performance
              for n in (2, 4, 8)]
    decode = [p.decode_tok_s for p in speeds if p is not None]
    assert len(decode) == 3 and decode[0] < decode[1] < decode[2]
    assert 0.7 < decode[2] / 328.43 < 1.3  # 244 here: still ~25 % under at 8 GPUs (was 126, 62 % under)


@pytest.mark.parametrize("gen,link_id", [(3, "pcie3-x16"), (4, "pcie4-x16"), (5, "pcie5-x16"),
                                         (None, "pcie4-x16"), (2, "pcie4-x16"), (6, "pcie4-x16")])
def test_pcie_x16_link_falls_back_to_gen4(gen: int | None, link_id: str) -> None:
    assert pcie_x16_link(gen).id == link_id


def _scan(name: str) -> object:
    """The lookup as it was before the index: normalise and scan the catalog in order, first match."""
    def key(s: str) -> str:
        return "".join(c for c in s.lower() if c.isalnum())

    k = key(name)
    for link in load_interconnects():
        if k == key(link.id) or k == key(link.name) or k in [key(a) for a in link.aliases]:
            return link
    return None


def test_indexed_lookup_finds_what_a_scan_of_the_catalog_finds() -> None:
    """Every spelling in the catalog (id, name, alias), re-spelt in case and punctuation, and some
    that match nothing: the indexed lookup returns the very entry the ordered scan returns."""
    spellings: list[str] = []
    for link in load_interconnects():
        for s in (link.id, link.name, *link.aliases):
            spellings += [s, s.upper(), s.replace("-", " "), f" {s}. ", s.replace(".", "")]
    spellings += ["pcie 4", "PCIe4.0x16", "nv-link", "", "---", "carrier-pigeon", "pcie9-x16"]
    assert len(spellings) > 100
    for s in spellings:
        expected = _scan(s)
        if expected is None:
            with pytest.raises(MlrigError):
                resolve_interconnect(s)
        else:
            assert resolve_interconnect(s) is expected, s
            assert resolve_interconnect(s) is expected, s  # and again, from the cache
