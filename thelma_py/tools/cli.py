"""The ``thelma`` command line: run a case script, list plug-ins, show lattices and tag layouts.

Sub-commands live in :data:`COMMANDS` (name -> :class:`Command`). Commands that belong to other
modules are looked up by module name in :data:`OPTIONAL_COMMANDS` and added when the module
exists; such a module exposes ``add_arguments(parser)`` and ``run(args) -> int``, and the first
line of its docstring is the command's help.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import time
import typing
import warnings
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import thelma_py
from thelma_py.lattice import LATTICES, lattice_by_name
from thelma_py.registry import KINDS, PluginParameterError, describe
from thelma_py.tools.case_input import (
    CliError,
    check_build_parameters,
    check_compute_parameters,
    load_case,
    parameter_types,
    parse_assignment,
)
from thelma_py.tools.image_option import HELP as IMAGE_HELP
from thelma_py.tools.image_option import image_results


class Command(NamedTuple):
    """One sub-command: ``add_arguments(parser)`` declares its options, ``handler(args)`` runs."""

    add_arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int | None]
    help: str = ""


# -- run ---------------------------------------------------------------------------------------
def _finite(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _json_ready(value):
    """Parameters for summary.json: literals as they are, anything else as its repr."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("case", help="path of the case script (a .py file with build())")
    parser.add_argument("--steps", type=int, help="time steps (default: the case's DEFAULT_STEPS)")
    parser.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="auto takes the GPU when CuPy finds one (default: auto)",
    )
    parser.add_argument(
        "--precision",
        choices=("float32", "float64"),
        help="floating-point precision of the run (default: the case's)",
    )
    parser.add_argument(
        "--out", type=Path, help="write VTK files, a .pvd and summary.json here (default: none)"
    )
    parser.add_argument(
        "--every", type=int, help="VTK output every N steps (default: the last step only)"
    )
    parser.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a build() parameter, converted to its type; may be repeated (default: the "
        "build() defaults)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no solver listing")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        metavar="DIR",
        help="write checkpoints here (every --checkpoint-every steps, and on SIGINT/SIGTERM; "
        "default: none)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        metavar="N",
        help="steps between checkpoints (default: the last step only)",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="continue from a checkpoint (a checkpoint directory or a --checkpoint root); "
        "--steps is then the final step, not a number of further steps (default: step 0)",
    )
    parser.add_argument(
        "--decomp",
        metavar="AxBxC",
        help="ranks per axis for a run under mpiexec, e.g. 1x1x4 (default: least cut area)",
    )
    parser.add_argument(
        "--max-velocity",
        type=float,
        metavar="U",
        help="stop with an error where |u| exceeds U (checked with the NaN check; default: no "
        "bound)",
    )
    parser.add_argument("--image", action="append", default=[], metavar="'KEY=VALUE ...'",
                        help=IMAGE_HELP)
    parser.add_argument(
        "--timings",
        type=int,
        metavar="N",
        help="record the step time every N steps and print its mean, spread and dominant "
        "period; with --out also as timings.csv (default: off)",
    )


def _run(args: argparse.Namespace) -> int:
    from thelma_py import parallel
    from thelma_py.solver import Solver

    case = load_case(args.case)
    expected = parameter_types(case.build)
    assignments = dict(
        parse_assignment(text, expected.get(text.partition("=")[0].strip(), typing.Any))
        for text in args.assignments
    )
    for reserved in ("device", "precision"):
        if reserved in assignments:
            raise CliError(f"set {reserved} with --{reserved}, not --set")
    kwargs = {"device": args.device}
    if args.precision is not None:
        kwargs["precision"] = args.precision
    kwargs.update(assignments)
    check_build_parameters(case.build, kwargs, args.case, set_keys=assignments)
    check_compute_parameters(case.build, kwargs, set_keys=assignments)

    steps = args.steps if args.steps is not None else getattr(case, "DEFAULT_STEPS", None)
    if steps is None:
        raise CliError(f"{args.case} defines no DEFAULT_STEPS; pass --steps N")
    if not isinstance(steps, int) or steps < 0:
        raise CliError(f"steps must be a non-negative integer, got {steps!r}")
    for option in ("every", "checkpoint_every", "timings"):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise CliError(f"--{option.replace('_', '-')} must be at least 1, got {value}")
    if args.checkpoint_every is not None and args.checkpoint is None:
        raise CliError("--checkpoint-every needs --checkpoint DIR (where to write them)")
    if args.max_velocity is not None and not 0 < args.max_velocity < math.inf:
        raise CliError(f"--max-velocity must be a positive lattice speed, got {args.max_velocity}")

    start = time.perf_counter()
    token = parallel.requested_decomposition.set(args.decomp)
    try:
        solver = case.build(**kwargs)
    finally:
        parallel.requested_decomposition.reset(token)
    build_seconds = time.perf_counter() - start
    if not isinstance(solver, Solver):
        raise CliError(
            f"{args.case}: build() returned {type(solver).__name__}, expected a thelma_py.Solver"
        )
    lead = solver.rank_box is None or solver.rank_box.cart.rank == 0
    if not lead:  # under mpiexec, rank 0 speaks for the run
        args.quiet = True
    if args.max_velocity is not None:
        solver.max_velocity = args.max_velocity
        solver.check_every = solver.check_every or 1000
    if args.out is not None:
        if args.every is not None:
            every = thelma_py.Every(args.every)
        else:  # the last step only (or the initial field when no step is run)
            every = thelma_py.Every(steps, at_start=False) if steps else thelma_py.Every(1)
        vtk = thelma_py.plugin("results", "vtk", path=args.out, every=every)
        solver.results.append(vtk)
    else:
        vtk = None
    if args.checkpoint is not None:
        every = args.checkpoint_every or max(steps, 1)
        solver.results.append(
            thelma_py.plugin("results", "checkpoint", path=args.checkpoint, every=every)
        )
    solver.results.extend(image_results(args.image, args.out, steps))
    if args.timings is not None:
        path = None if args.out is None else args.out / "timings.csv"  # for `thelma plot`
        solver.results.append(
            thelma_py.plugin("results", "timings", every=args.timings, path=path)
        )
    if args.resume is not None:
        resumed = solver.load_checkpoint(args.resume)
        if resumed > steps:
            raise CliError(
                f"the checkpoint is at step {resumed}, beyond --steps {steps}; with --resume, "
                "--steps is the final step"
            )
        print(f"resumed    from step {resumed} ({args.resume})", flush=True)
        steps -= resumed
    else:
        resumed = None
    if not args.quiet:
        solver.results.append(thelma_py.plugin("results", "progress"))
        print(solver, flush=True)

    start = time.perf_counter()
    failure = None  # what ended the run early: a signal, a divergence, another error
    try:
        solver.run(steps)
    except (KeyboardInterrupt, Exception) as error:  # the records below are written anyway
        failure = error
    failure = close_run(solver, vtk, failure)
    wall = time.perf_counter() - start
    interrupted = isinstance(failure, KeyboardInterrupt)
    if interrupted:
        print(f"thelma run: {str(failure) or 'interrupted'}", file=sys.stderr, flush=True)

    done = solver.steps_timed
    summary = {
        "case": str(args.case),
        "parameters": {key: _json_ready(value) for key, value in kwargs.items()},
        **solver.summary(),
        "resumed_from": resumed,
        "build_seconds": round(build_seconds, 6),
        "wall_seconds": round(wall, 6),
        "wall_mlups": round(solver.node_count * done / wall / 1e6, 3) if wall > 0 else None,
        "interrupted": interrupted,
        "error": None if failure is None or interrupted else f"{type(failure).__name__}: {failure}",
        "output": None if args.out is None else str(args.out),
    }
    summary = {key: _finite(value) for key, value in summary.items()}
    if lead:
        _report_run(case, solver, kwargs, summary, args.out, failure)
    if failure is not None and not interrupted:
        raise failure  # one line on stderr (main), after the records
    if not interrupted:
        return 0
    return 143 if getattr(failure, "signal_name", "") == "SIGTERM" else 130


def close_run(solver, vtk, failure: BaseException | None) -> BaseException | None:
    """Let the results plug-ins close their files whatever ended the run. After a divergence
    (which every rank sees) the fields of the step it was found at are written too, so that
    the ``.pvd`` shows it. Returns the exception to report: ``failure``, else one raised by
    the plug-ins' ``finish``."""
    from thelma_py.solver import DivergenceError

    if (
        isinstance(failure, DivergenceError)
        and vtk is not None
        and solver.time_step not in {step for step, _ in vtk.written}
    ):
        with contextlib.suppress(Exception):  # best effort: the divergence is what is reported
            vtk(solver)
    try:
        solver.finish()
    except Exception as error:
        return failure or error
    return failure


def _report_run(
    case, solver, kwargs: dict, summary: dict, out: Path | None, failure: BaseException | None
) -> None:
    """Print the run's figures and write ``summary.json`` (the lead rank)."""
    mlups = "n/a" if summary["mlups"] is None else f"{summary['mlups']:.2f}"
    span = (
        f" (step {summary['resumed_from']} to {summary['time_step']})"
        if summary["resumed_from"] is not None
        else ""
    )
    ended = "" if failure is None else " (interrupted)" if summary["interrupted"] else " (failed)"
    print(
        f"steps      {summary['steps']}{span}{ended}"
        f"{'  ' + summary['stopped'] if summary['stopped'] else ''}\n"
        f"wall time  {summary['wall_seconds']:.3f} s (build {summary['build_seconds']:.3f} s)\n"
        f"MLUPS      {mlups} (compute), {summary['wall_mlups']} (wall)\n"
        f"backend    {summary['backend']}, {summary['precision']}"
    )
    report = getattr(case, "report", None)
    if report is not None and failure is None and solver.rank_box is None:
        bound = inspect.signature(case.build).bind_partial(**kwargs)
        bound.apply_defaults()
        summary["report"] = report(solver, **bound.arguments)
        print(f"report     {summary['report']}")
    if out is not None:
        from thelma_py.files import atomic_write_text

        atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
        print(f"output     {out / 'fields.pvd'} (open in ParaView), {out / 'summary.json'}")


def run_case(path: str | Path, argv: list[str] | None = None) -> int:
    """``thelma run PATH ARGV...``: what a case script's ``main()`` calls."""
    return main(["run", str(path), *(sys.argv[1:] if argv is None else argv)])


# -- list --------------------------------------------------------------------------------------
def _list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", nargs="?", choices=KINDS, help="only this kind (default: all)")


def _list(args: argparse.Namespace) -> int:
    for kind in [args.kind] if args.kind else KINDS:
        print(f"{kind}:")
        for line in describe(kind) or ["(none)"]:
            print(f"  {line}")
    return 0


# -- info --------------------------------------------------------------------------------------
def _lattice_name(text: str) -> str:
    try:
        return lattice_by_name(text).name
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _info_arguments(parser: argparse.ArgumentParser) -> None:
    topics = parser.add_subparsers(dest="topic", required=True, metavar="TOPIC")
    nested = {"parents": [common_options()], "formatter_class": HelpFormatter}
    tags = topics.add_parser("tags", help="bit layout of the node tag word", **nested)
    tags.add_argument(
        "--lattice",
        type=_lattice_name,
        default="D3Q19",
        help=f"one of {', '.join(LATTICES)}",
    )
    lattice = topics.add_parser("lattice", help="velocities, weights and opposites", **nested)
    lattice.add_argument("name", type=_lattice_name, help=", ".join(LATTICES))


def lattice_table(name: str) -> str:
    """Velocities c_i, weights w_i and opposite directions of a lattice, as text."""
    lat = lattice_by_name(name)
    rows = [
        f"{lat.name}: d = {lat.d}, q = {lat.q}, cs^2 = {Fraction(lat.cs2).limit_denominator()}",
        f"  {'i':>3}  {'c_i':<{4 * lat.d + 2}} {'w_i':>6}  opposite",
    ]
    for i, (c, w, opposite) in enumerate(zip(lat.c, lat.w, lat.opposite, strict=True)):
        velocity = "(" + ", ".join(f"{int(v):2d}" for v in c) + ")"
        weight = str(Fraction(float(w)).limit_denominator(10_000))
        rows.append(f"  {i:>3}  {velocity:<{4 * lat.d + 2}} {weight:>6}  {opposite:>8}")
    if lat.mrt is not None:
        rows.append(f"  MRT moments: {', '.join(lat.mrt.names)}")
    return "\n".join(rows)


def _info(args: argparse.Namespace) -> int:
    if args.topic == "tags":
        from thelma_py.tags import TagLayout

        print(TagLayout(lattice_by_name(args.lattice)).describe())
    else:
        print(lattice_table(args.name))
    return 0


COMMANDS: dict[str, Command] = {
    "run": Command(
        _run_arguments, _run, "run a case script: CASE.py defines build(**parameters) -> Solver"
    ),
    "list": Command(
        _list_arguments, _list, "list the registered plug-ins of each kind with their parameters"
    ),
    "info": Command(
        _info_arguments,
        _info,
        "show a node-tag bit layout (info tags) or a velocity set (info lattice)",
    ),
}
"""Built-in sub-commands, by name: add more here, or in :data:`OPTIONAL_COMMANDS`."""

OPTIONAL_COMMANDS: dict[str, str] = {
    "bench": "thelma_py.tools.bench",
    "kernels": "thelma_py.codegen.kernels_cli",
    "movie": "thelma_py.tools.movie",
    "plot": "thelma_py.tools.plots",
    "validate": "thelma_py.tools.report",
}
"""Sub-commands provided by modules that may be absent: name -> module."""


# -- optional commands from other modules ------------------------------------------------------
def _unavailable(name: str, module_name: str, error: Exception) -> Command:
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("rest", nargs=argparse.REMAINDER)

    def handler(args: argparse.Namespace) -> int:
        raise CliError(
            f"'thelma {name}' is unavailable: importing {module_name} failed: "
            f"{type(error).__name__}: {error}"
        )

    return Command(add_arguments, handler, f"(unavailable: {module_name} failed to import)")


def optional_commands() -> dict[str, Command]:
    """Commands of :data:`OPTIONAL_COMMANDS` whose module exists (imported here, on demand)."""
    found = {}
    for name, module_name in OPTIONAL_COMMANDS.items():
        try:
            present = importlib.util.find_spec(module_name) is not None
        except ModuleNotFoundError:  # a parent package is missing
            present = False
        if not present:
            continue
        try:
            module = importlib.import_module(module_name)
            found[name] = Command(
                module.add_arguments, module.run, (inspect.getdoc(module) or "").split("\n")[0]
            )
        except Exception as error:  # a broken optional command must not break `thelma run`
            found[name] = _unavailable(name, module_name, error)
    return found


class HelpFormatter(argparse.HelpFormatter):
    """Ends every option's help with its default, unless the help already speaks of it (flags
    and options without a default say in words what happens without them)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        unset = any(default is v for v in (None, False, argparse.SUPPRESS))  # 0 is a default
        empty = isinstance(default, list | tuple) and not default
        if "default" in text or unset or empty or not action.option_strings:
            return text
        shown = ",".join(map(str, default)) if isinstance(default, list | tuple) else default
        return f"{text} (default: {str(shown).replace('%', '%%')})"


def common_options() -> argparse.ArgumentParser:
    """Options every sub-command takes after its name as well (``thelma run ... --traceback``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--traceback",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback of an error",
    )
    return common


def build_parser(commands: dict[str, Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thelma",
        description="thelma-py: TheLMA-style LBM and LW-ACM solvers "
        "(NumPy reference, CuPy on NVIDIA GPUs).",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=thelma_py.__version__)
    parser.add_argument(
        "--traceback", action="store_true", help="show the full traceback of an error"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, entry in commands.items():
        child = sub.add_parser(
            name,
            help=entry.help,
            description=entry.help,
            parents=[common_options()],
            formatter_class=HelpFormatter,
        )
        entry.add_arguments(child)
        child.set_defaults(handler=entry.handler)
    return parser


_USER_ERRORS = (
    CliError,
    ValueError,
    LookupError,
    PluginParameterError,
    OSError,
    RuntimeError,
    MemoryError,
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``thelma`` console script; returns the exit status."""
    parser = build_parser({**COMMANDS, **optional_commands()})
    args = parser.parse_args(argv)
    formatwarning = warnings.formatwarning
    if not args.traceback:  # a warning is one line too, without the source line
        warnings.formatwarning = lambda message, category, *_, **__: (
            f"thelma {args.command}: warning: {message}\n"
        )
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # `thelma list | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except _USER_ERRORS as error:
        if args.traceback:
            raise
        label = "" if isinstance(error, CliError) else f"{type(error).__name__}: "
        print(f"thelma {args.command}: error: {label}{error}", file=sys.stderr)
        return 2 if isinstance(error, CliError) else 1
    finally:
        warnings.formatwarning = formatwarning
