"""Mutation testing of the physics modules with cosmic-ray, one command:

    pip install -e '.[test,mutation]'
    python tests/mutation/run.py                 # every module below (a nightly-sized run)
    python tests/mutation/run.py collision forces  # some of them
    python tests/mutation/run.py --report        # the tables of the last run, no new work

Why cosmic-ray, and why a staged copy: ``modules/`` and ``geometry/`` install as
``thelma_py.modules`` and ``thelma_py.geometry`` (package-dir mapping), so an editable install
resolves them through its finder to this checkout. mutmut 3 mutates a copy under ``mutants/``
that the tests then never import (it stops with "could not find any test case for any
mutant"). Here the package is staged as it installs (``thelma_py/modules``, ...) in
``.mutation/tree`` and put first on PYTHONPATH, so the tests import the staged copy, and
cosmic-ray mutates that copy in place: the checkout is never modified, and other work can go on
while a run lasts.

Each module has its own focused test selection (seconds per mutant; ``-x`` stops at the first
failure) and its own session, so a run can be cut and resumed (``cosmic-ray exec`` does only
the pending mutants). The operators are a subset chosen for numerical code (see OPERATORS); the
kill rates and the survivors of the last recorded run are in docs/MUTATION.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".mutation"
TREE = WORK / "tree"
STAGED = [("thelma_py", "thelma_py"), ("modules", "thelma_py/modules"),
          ("geometry", "thelma_py/geometry"), ("cases", "thelma_py/cases"), ("cases", "cases"),
          ("tests", "tests")]
"""(source folder, where it installs: pyproject.toml, [tool.setuptools.package-dir]); tests
also load cases/ by path."""

PYTEST = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p",
          "no:randomly", "-m", "not gpu and not slow and not nvcc"]

EXACT = "tests/test_exact_solutions.py"
OPEN_FACES = ("(test_boundaries or density or imposed_drop or free_slip) and not converges "
              "and not square_duct and not mrt_square")
MODULES: dict[str, tuple[str, list[str], set[str] | None]] = {
    "collision": ("modules/compute/lbm/collision.py", [
        "tests/test_lattice.py", "tests/test_collision_models.py",
        "tests/test_mrt_rates.py::test_each_mrt_moment_relaxes_at_its_published_rate",
        "tests/test_mrt_rates.py::test_a_rate_given_by_name_replaces_the_published_one",
        "tests/test_mrt_rates.py::test_magic_odd_rates_relax_q_and_m_at_the_trt_odd_rate",
        "tests/test_lbm_reference.py::test_moving_wall_term_at_the_lid_corner",
        "tests/test_lbm_reference.py::test_guo_force_adds_rho_g_momentum_per_step",
        "tests/test_lbm_reference.py::test_guo_force_uniform_acceleration_of_the_velocity",
        "tests/test_lbm_reference.py::test_initial_velocity_is_reported_unchanged_with_a_body_force",
        "tests/test_validation.py::test_taylor_green_decay_rate",
        f"{EXACT}::test_couette_between_moving_halfway_walls_is_linear",
        f"{EXACT}::test_free_slip_plane_is_the_centre_line_of_a_channel",
        "tests/test_lwacm_reference.py::test_body_force_accelerates_uniformly"], None),
    "boundaries": ("modules/compute/lbm/boundaries.py", [
        EXACT, "tests/test_boundaries.py", "-k", OPEN_FACES], None),
    "open_nodes": ("modules/compute/lbm/open_nodes.py", [
        EXACT, "tests/test_boundaries.py", "tests/test_interpolated.py", "-k",
        f"({OPEN_FACES}) or fall_back"], None),
    "interpolated": ("modules/compute/lbm/interpolated.py", [
        "tests/test_interpolated.py", EXACT, "tests/test_dense_host_engine.py", "-k",
        "(test_interpolated or off_lattice or taylor_couette or curved or gap) "
        "and not second_order"], None),
    "forces": ("modules/compute/lbm/forces.py", [
        "tests/test_forces.py", "tests/test_interpolated.py", EXACT,
        "tests/test_parallel_results.py", "-k",
        "(momentum_balance or no_lift or shear_stress or csv or sub_boxes or carry "
        "or forces_profiles) and not schaefer"], None),
    "lwacm_rule": ("modules/compute/lwacm/rule.py", [
        "tests/test_lwacm_reference.py", "tests/test_lwacm_kernels.py",
        "tests/test_lwacm_validation.py::test_taylor_green_decay_rate",
        f"{EXACT}::test_couette_between_moving_halfway_walls_is_linear"], None),
    # the models' own relaxations, one file each since the collision table
    "bgk": ("modules/compute/lbm/collisions/bgk.py", [
        "tests/test_collision_models.py",
        "tests/test_validation.py::test_taylor_green_decay_rate"], None),
    "trt": ("modules/compute/lbm/collisions/trt.py", [
        "tests/test_collision_models.py",
        "tests/test_validation.py::test_taylor_green_decay_rate", "tests/test_lattice.py",
        f"{EXACT}::test_couette_between_moving_halfway_walls_is_linear"], None),
    "mrt": ("modules/compute/lbm/collisions/mrt.py", [
        "tests/test_mrt_rates.py", "tests/test_collision_models.py",
        "tests/test_validation.py::test_taylor_green_decay_rate"], None),
    "regularized": ("modules/compute/lbm/collisions/regularized.py", [
        "tests/test_collision_models.py",
        "tests/test_regularized.py",
        "tests/test_validation.py::test_taylor_green_decay_rate"], None),
    "equilibrium": ("thelma_py/lattice.py", [
        "tests/test_lattice.py", "tests/test_mrt_rates.py",
        "tests/test_lbm_reference.py::test_rest_state_is_a_fixed_point",
        "tests/test_lbm_reference.py::test_uniform_flow_stays_uniform",
        "tests/test_validation.py::test_taylor_green_decay_rate"],
        {"equilibrium", "equilibrium_i", "rates"}),
}
"""name -> (source file, pytest arguments: the tests that should kill its mutants, the
functions to mutate or None for the whole file). Of thelma_py/lattice.py only the equilibrium
and the MRT rates are physics under test here; its tables are pinned literally by
tests/test_lattice.py and tests/test_mrt_rates.py."""

OPERATORS = [
    r"ReplaceBinaryOperator_(Add_Sub|Sub_Add|Mul_Div|Div_Mul)",
    r"ReplaceComparisonOperator_(Eq_NotEq|NotEq_Eq|Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Lt_Gt|Gt_Lt)",
    r"ReplaceUnaryOperator_(USub_UAdd|Delete_USub)",
    r"NumberReplacer", r"ReplaceTrueWithFalse", r"ReplaceFalseWithTrue", r"ReplaceAndWithOr",
    r"ReplaceOrWithAnd", r"AddNot", r"ZeroIterationForLoop", r"ReplaceBreakWithContinue",
    r"ReplaceContinueWithBreak",
]
"""Operators kept: sign errors and inverted factors (+ ↔ −, × ↔ ÷), off-by-one and reversed
comparisons, constants (each number ± 1), flags, conditions and loops. Left out: the other
arithmetic swaps (+ → ×, ...), bitwise and shift replacements, exception, decorator and
variable replacers: a float through a shift is a TypeError, an instant kill that says nothing
about the tests, and all of them together would make the run five times longer than this
machine allows (about 4 mutants a minute on two shared cores)."""

TIMEOUT = 120.0
"""Seconds per mutant: about four times the slowest selection's baseline on a loaded 2-core
machine; a mutant that loops or slows a run that much counts as killed (cosmic-ray's rule)."""


def stage(tree: Path = TREE) -> None:
    """Copy the sources to ``tree`` in their installed layout (Python and data files only)."""
    if tree.exists():
        shutil.rmtree(tree)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".mutation", "*.so")
    for source, target in STAGED:
        shutil.copytree(ROOT / source, tree / target, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", tree / "pyproject.toml")


def staged_path(source: str) -> str:
    for folder, target in STAGED:
        if source.startswith(folder + "/"):
            return target + source[len(folder):]
    raise ValueError(f"{source} is not under a staged folder")


def config_text(name: str) -> str:
    source, selection, _ = MODULES[name]
    command = shlex.join(PYTEST + selection)
    keep = "|".join(OPERATORS)
    return "\n".join([
        "[cosmic-ray]",
        f'module-path = "{staged_path(source)}"',
        f"timeout = {TIMEOUT}",
        "excluded-modules = []",
        f"test-command = {json.dumps(command)}",
        "",
        "[cosmic-ray.distributor]",
        'name = "local"',
        "",
        "[cosmic-ray.filters.operators-filter]",
        f"exclude-operators = [{json.dumps('^core/(?!(' + keep + ')$)')}]",
        ""])


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(TREE), "PYTHONDONTWRITEBYTECODE": "1",
            "THELMA_REFERENCE": os.environ.get("THELMA_REFERENCE",
                                               str(ROOT.parent / "shared" / "reference"))}


def tool(*args: str) -> subprocess.CompletedProcess:
    """Run a cosmic-ray command (its scripts live next to this Python) in the staged tree."""
    script = Path(sys.executable).with_name(args[0])
    return subprocess.run([str(script), *args[1:]], cwd=TREE, env=environment(), check=True,
                          capture_output=True, text=True)


def counts(session: Path) -> dict[str, int]:
    """Mutants of a session by outcome: killed, survived, incompetent (the tests could not run
    it), pending; those of the operators left out (skipped) are not counted."""
    with sqlite3.connect(session) as db:
        rows = db.execute("SELECT worker_outcome, test_outcome, COUNT(*) FROM work_results "
                          "GROUP BY worker_outcome, test_outcome").fetchall()
        total = db.execute("SELECT COUNT(*) FROM work_items").fetchone()[0]
    out = {"killed": 0, "survived": 0, "incompetent": 0, "skipped": 0}
    for worker, test, n in rows:
        key = "skipped" if worker == "SKIPPED" else str(test).lower()
        out[key] = out.get(key, 0) + int(n)
    out["pending"] = int(total) - sum(out.values())
    del out["skipped"]
    return out


def survivors(session: Path) -> list[str]:
    """'file:line operator (occurrence)' of every surviving mutant."""
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT m.module_path, m.start_pos_row, m.operator_name, m.occurrence "
            "FROM mutation_specs m JOIN work_results r ON m.job_id = r.job_id "
            "WHERE r.test_outcome = 'SURVIVED' ORDER BY m.start_pos_row").fetchall()
    return [f"{path}:{row} {op.removeprefix('core/')} #{occ}" for path, row, op, occ in rows]


def keep_only(session: Path, definitions: set[str] | None) -> None:
    """Skip the pending mutants outside ``definitions`` (function names; None: keep all)."""
    if definitions is None:
        return
    with sqlite3.connect(session) as db:
        names = ",".join("?" * len(definitions))
        db.execute(
            "INSERT INTO work_results (job_id, worker_outcome, output) SELECT m.job_id, "
            "'SKIPPED', 'Filtered definition' FROM mutation_specs m WHERE m.job_id NOT IN "
            f"(SELECT job_id FROM work_results) AND (m.definition_name IS NULL OR "
            f"m.definition_name NOT IN ({names}))", sorted(definitions))


def forget_survivors(session: Path) -> None:
    """Make the survivors of a session pending again (killed mutants stay killed: tests and
    selections are only ever added to)."""
    if session.exists():
        with sqlite3.connect(session) as db:
            db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'")


def run(name: str) -> dict:
    session = WORK / f"{name}.sqlite"
    config = WORK / f"{name}.toml"
    config.write_text(config_text(name))
    start = time.perf_counter()
    if not session.exists():
        tool("cosmic-ray", "init", str(config), str(session))
        tool("cr-filter-operators", str(session), str(config))
        keep_only(session, MODULES[name][2])
        clock = time.perf_counter()
        baseline = subprocess.run(PYTEST + MODULES[name][1], cwd=TREE, env=environment(),
                                  capture_output=True, text=True)
        print(f"{name}: {counts(session)['pending']} mutants; the selected tests take "
              f"{time.perf_counter() - clock:.0f} s unmutated", flush=True)
        if baseline.returncode != 0:
            session.unlink()
            raise SystemExit(f"{name}: the selected tests fail without a mutation:\n"
                             f"{baseline.stdout[-3000:]}")
    tool("cosmic-ray", "exec", str(config), str(session))
    result = {"module": MODULES[name][0], **counts(session),
              "seconds": round(time.perf_counter() - start)}
    result["survivors"] = survivors(session)
    return result


def table(results: list[dict]) -> str:
    lines = ["| module | mutants | killed | survived | incompetent | pending | kill rate |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    total = {"killed": 0, "survived": 0}
    for r in results:
        judged = r.get("killed", 0) + r.get("survived", 0)
        n = judged + r.get("incompetent", 0) + r.get("pending", 0)
        rate = f"{100 * r.get('killed', 0) / judged:.1f} %" if judged else "-"
        lines.append(f"| {r['module']} | {n} | {r.get('killed', 0)} | {r.get('survived', 0)} "
                     f"| {r.get('incompetent', 0)} | {r.get('pending', 0)} | {rate} |")
        for key in total:
            total[key] += r.get(key, 0)
    judged = total["killed"] + total["survived"]
    if judged:
        lines.append(f"| all | | {total['killed']} | {total['survived']} | | | "
                     f"{100 * total['killed'] / judged:.1f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE",
                        help=f"some of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--report", action="store_true",
                        help="print the tables of the recorded sessions, run nothing")
    parser.add_argument("--fresh", action="store_true",
                        help="forget the recorded sessions and stage the sources again")
    parser.add_argument("--recheck", action="store_true",
                        help="stage the sources again and run the survivors of the recorded "
                             "sessions once more, with the current tests and selections")
    args = parser.parse_args(argv)
    names = args.modules or list(MODULES)
    unknown = set(names) - set(MODULES)
    if unknown:
        parser.error(f"unknown module(s) {sorted(unknown)}; valid: {', '.join(MODULES)}")
    WORK.mkdir(exist_ok=True)
    if args.fresh:
        for name in names:
            (WORK / f"{name}.sqlite").unlink(missing_ok=True)
    if not args.report and (args.fresh or args.recheck or not TREE.exists()):
        stage()
    if args.recheck:
        for name in names:
            forget_survivors(WORK / f"{name}.sqlite")
    results = []
    for name in names:
        session = WORK / f"{name}.sqlite"
        if args.report:
            if session.exists():
                results.append({"module": MODULES[name][0], **counts(session),
                                "survivors": survivors(session)})
            continue
        results.append(run(name))
        print(table(results[-1:]), flush=True)
    print(table(results))
    for r in results:
        for line in r["survivors"]:
            print(f"survived: {line}")
    (WORK / "last.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
