"""Reference tables ship inside the package (package data), so that a fresh clone or a wheel
validates without any folder beside the repository; ``$THELMA_REFERENCE`` still overrides."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import thelma_py
from thelma_py.cases import reference as validation

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python >= 3.11")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(thelma_py.__file__).resolve().parent
TABLES = ["ghia1982_re100_u.csv", "ghia1982_re100_v.csv", "ghia1982_re400_u.csv",
          "ghia1982_re400_v.csv", validation.TGV_REFERENCE]


def test_the_tables_are_inside_the_package_with_their_sources():
    assert validation.PACKAGED_REFERENCE == PACKAGE / "reference"
    readme = (validation.PACKAGED_REFERENCE / "README.md").read_text()
    for name in TABLES:
        path = validation.PACKAGED_REFERENCE / name
        assert path.read_text().startswith("# source: "), name
        assert name in readme, name
    assert "Ghia, Ghia & Shin 1982" in readme and "PetIBM" in readme


def test_package_data_installs_every_reference_file():
    """setuptools copies package data by these globs (relative to the package) into a wheel."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        globs = tomllib.load(handle)["tool"]["setuptools"]["package-data"]["thelma_py"]
    installed = {p for pattern in globs for p in (ROOT / "thelma_py").glob(pattern)}
    on_disk = {p for p in (ROOT / "thelma_py" / "reference").iterdir() if p.is_file()}
    assert on_disk and sorted(on_disk - installed) == []


def test_the_reference_is_read_without_sibling_folders():
    ghia = validation.load_ghia(400)
    assert len(ghia["y"]) == 15 and ghia["u"][ghia["y"] == 0.5][0] == pytest.approx(-0.11477)
    assert validation.load_tgv_reference()["t"].size == 2000


def test_a_missing_table_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        validation.load_ghia(100, tmp_path)


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def test_thelma_reference_overrides_the_packaged_tables(tmp_path):
    for name in TABLES[:2]:
        shutil.copy(validation.PACKAGED_REFERENCE / name, tmp_path / name)
    (tmp_path / TABLES[0]).write_text((tmp_path / TABLES[0]).read_text().replace(
        "0.5000,-0.20581", "0.5000,-0.5"))
    code = ("from thelma_py.cases import reference as v; g = v.load_ghia(100); "
            "print(v.REFERENCE, g['u'][g['y'] == 0.5][0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(THELMA_REFERENCE=str(tmp_path)), check=True).stdout
    assert out.split() == [str(tmp_path), "-0.5"]


def test_validate_refuses_missing_tables_instead_of_skipping(tmp_path):
    """With the tables gone the cavity section is an error, not "all checks pass"."""
    out = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "thelma_py", "validate", "--only", "cavity", "--device", "cpu",
         "--out", str(out)], capture_output=True, text=True,
        env=_env(THELMA_REFERENCE=str(tmp_path / "empty")))
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "ghia1982_re100_u.csv" in result.stderr and "all checks pass" not in result.stdout
    assert not (out / "report.md").exists()


def test_the_cavity_case_reports_its_ghia_deviation():
    from thelma_py.cases import lid_driven_cavity as case

    solver = case.build(device="cpu", n=8)
    assert case.report(solver, reynolds=100.0, dim=2).startswith("max |u - Ghia| / U = ")
