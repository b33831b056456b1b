"""Distributed results: per-rank checkpoints and results reduced over the ranks.

Each test starts `mpiexec` on a script in tests/mpi/ (see tests/test_parallel.py) and checks
numbers against one domain.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import thelma_py as tp
from tests.test_parallel import mpiexec
from thelma_py.checkpoints import CheckpointError
from thelma_py.geometry import Geometry

MPI_DIR = Path(__file__).parent / "mpi"


def run_script(script: str, ranks: int, *args) -> str:
    result = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, str(MPI_DIR / script),
                             *map(str, args)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_distributed_checkpoint_restarts_bit_for_bit_on_its_decomposition_only(tmp_path):
    root = tmp_path / "checkpoints"
    out = run_script("checkpoint_run.py", 2, "restart", root, "2x1", "1x2")
    assert "identical: restart at 30 of 2x1 on 2 ranks" in out
    assert ("written on decomposition 2x1 (2 ranks); this run is on decomposition 1x2 "
            "(2 ranks)") in out
    out = run_script("checkpoint_run.py", 4, "refuse", root, "2x2")
    assert "written on decomposition 2x1 (2 ranks); this run is on decomposition 2x2 (4 ranks)" \
        in out
    sys.path.insert(0, str(MPI_DIR))
    try:
        from decomposed_run import build
    finally:
        sys.path.remove(str(MPI_DIR))
    single = build("D2Q9", "trt", comm=None)
    with pytest.raises(CheckpointError, match=r"decomposition 2x1 \(2 ranks\); this run is on "
                                              "one domain"):
        single.load_checkpoint(root)


@pytest.mark.parametrize("scheme", ["lwacm", "lwacm-fused"])
@pytest.mark.slow
def test_distributed_lwacm_checkpoint_restarts_bit_for_bit(tmp_path, scheme):
    """The LW-ACM states (f*, j; or ρ, u records) on the owned box: a restart fills the
    ghost layers by the next exchange, as it does for LBM."""
    out = run_script("checkpoint_run.py", 2, "restart", tmp_path / "checkpoints", "1x2", "2x1",
                     scheme)
    assert f"identical: restart at 30 of 1x2 on 2 ranks ({scheme})" in out


@pytest.mark.parametrize(("ranks", "dims"), [(2, "2x1"), (4, "2x2")])
@pytest.mark.slow
def test_residual_history_and_probes_reduced_over_ranks_equal_one_domain(tmp_path, ranks, dims):
    out = run_script("results_run.py", ranks, tmp_path, dims)
    assert f"equal: residual, history, probes on {dims}, {ranks} ranks" in out
    assert (tmp_path / "parts" / "probes.csv").read_text() == \
        (tmp_path / "whole" / "probes.csv").read_text()


@pytest.mark.parametrize(("ranks", "dims"), [(2, "2x1"), (4, "2x2")])
@pytest.mark.slow
def test_distributed_statistics_equal_one_domain_and_resume_bit_for_bit(tmp_path, ranks, dims):
    """The ranks' pieces of the statistics file, read as one data set, hold the one domain's
    numbers to the bit (the seam planes included), and a resumed run sums the same samples."""
    pytest.importorskip("vtkmodules")
    out = run_script("statistics_run.py", ranks, tmp_path, dims)
    assert f"equal: statistics on {dims}, {ranks} ranks, 9 samples, resumed bit for bit" in out
    assert len(list((tmp_path / "parts").glob("statistics_r*.vti"))) == ranks


@pytest.mark.slow
def test_a_signal_on_one_rank_stops_every_rank_at_the_same_step(tmp_path):
    """SIGTERM on rank 0 only: the ranks agree after the batch, write the checkpoint together
    and stop at step 20; without the agreement rank 0 would wait in the checkpoint's
    collective calls while the others exchange halos, and the run would hang (timeout)."""
    out = run_script("signal_run.py", 2, str(tmp_path / "ck"))
    assert "stopped together at step 20" in out
    assert (tmp_path / "ck" / "step_0000000020").is_dir()


@pytest.mark.parametrize(("ranks", "dims", "lattice", "kind"), [
    (2, "2x1", "D2Q9", "halfway"),
    (2, "1x2", "D2Q9", "interpolated"),
    (4, "2x2", "D2Q9", "interpolated"),
    (4, "4x1", "D2Q9", "halfway"),
    (2, "1x1x2", "D3Q19", "interpolated"),
    (4, "2x1x2", "D3Q19", "halfway"),
])
@pytest.mark.slow
def test_forces_profiles_and_timings_of_a_decomposed_run_equal_one_domain(tmp_path, ranks, dims,
                                                                          lattice, kind):
    """Bodies cut by the decomposition (and one across the periodic edge): the forces equal
    one domain to rounding (1e-13 of the momentum flux through the body's links: each link's
    term is the same number, only the order of the additions differs), the profile files byte
    for byte, the timings files in structure (tests/mpi/bodies_run.py)."""
    out = run_script("bodies_run.py", ranks, tmp_path, dims, lattice, kind)
    assert f"equal: forces, profiles, timings on {dims} {lattice} {kind}" in out
    for name in ("forces.csv", "timings.csv"):
        assert (tmp_path / "parts" / name).read_text().splitlines()[0] == \
            (tmp_path / "whole" / name).read_text().splitlines()[0]


class _TwoRanks:
    """Stands in for a communicator of two ranks: the refusal comes before any MPI call."""

    size = 2


def test_results_plugins_without_distributed_support_are_refused_naming_those_with_it():
    class Snapshot:
        schedule = None

        def __call__(self, solver) -> None:
            """A results plug-in that reads whole fields (no supports_distributed)."""

    with pytest.raises(ValueError, match=r"\['Snapshot'\] do not run distributed yet; "
                                         r"distributed runs take checkpoint, forces, .*profile, "
                                         r".*timings, vtk"):
        tp.compose("D2Q9", Geometry((8, 6)), tp.plugin("compute", "lbm", nu=0.1),
                   results=[tp.plugin("results", "forces"), Snapshot()], device="cpu",
                   comm=_TwoRanks())
