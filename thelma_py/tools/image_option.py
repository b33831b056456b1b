"""``thelma run --image "field=vorticity axis=y every=100"``: an image results plug-in from the
command line. Each ``--image`` is one plug-in; its words are ``key=value`` parameters of
``tp.plugin("results", "image", ...)`` (values read as Python literals, else as text).
Files go to ``<--out>/images`` (``./images`` without ``--out``) unless ``path=`` is given.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from thelma_py.registry import create
from thelma_py.tools.case_input import CliError, parse_assignment

HELP = ('an image every N steps, e.g. --image "field=vorticity axis=y every=100" or '
        '--image "view=3d field=q_criterion"; may be repeated (parameters: '
        'help(thelma_py.plugin("results", "image")); default: none)')


def image_results(options: list[str], out: Path | None, steps: int) -> list:
    """One image plug-in per ``--image`` text (every: the last step unless given)."""
    plugins = []
    for text in options:
        kwargs = {}
        for word in shlex.split(text):
            try:
                key, value = parse_assignment(word)
            except CliError as error:
                raise CliError(f"--image: {str(error).removeprefix('--set ')}") from None
            kwargs[key] = value
        kwargs.setdefault("path", (out or Path(".")) / "images")
        kwargs.setdefault("every", max(steps, 1))
        try:
            plugins.append(create("results", "image", **kwargs))
        except (TypeError, ValueError) as error:
            raise CliError(f"--image {text!r}: {error}") from None
    return plugins
