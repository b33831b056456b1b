"""Print the generated CUDA source of a compute plug-in configuration.

``thelma kernels lbm --lattice D3Q19 --precision float32 --set collision=mrt streaming=aa``
prints what the GPU would compile for a domain of ``--size`` nodes a side (256: the index
width, 32- or 64-bit, follows from it), for inspection; ``--out FILE`` writes it instead.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from thelma_py import registry
from thelma_py.lattice import lattice_by_name


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("compute", help="compute plug-in name (see 'thelma list')")
    parser.add_argument("--lattice", default="D3Q19", help="velocity set: D2Q9, D3Q19, D3Q27")
    parser.add_argument("--precision", default="float32", choices=["float32", "float64"],
                        help="floating-point type of the kernels")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="plug-in parameters (default: the plug-in's, with nu = 0.1)")
    parser.add_argument("--size", type=int, default=256,
                        help="nodes a side of the domain the kernels are for (their index width "
                             "follows: 32-bit where every population index fits; default 256)")
    parser.add_argument("--static-walls", action="store_true",
                        help="the variant for geometries whose walls are all at rest")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the source to this file (default: print it)")


def run(args: argparse.Namespace) -> int:
    params = {"nu": 0.1}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        params[key] = _value(value)
    plugin = registry.create("compute", args.compute, **params)
    if not hasattr(plugin, "kernel_source"):
        raise SystemExit(f"compute plug-in {args.compute!r} generates no CUDA source")
    if args.size < 1:
        raise SystemExit(f"--size must be a positive number of nodes a side, got {args.size}")
    lattice = lattice_by_name(args.lattice)
    source = plugin.kernel_source(lattice, args.precision, moving_walls=not args.static_walls,
                                  nodes=args.size**lattice.d)
    if args.out:
        args.out.write_text(source)
        print(f"wrote {args.out} ({len(source.splitlines())} lines)")
    else:
        print(source)
    return 0
