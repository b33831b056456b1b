"""``python -m thelma_py``: the same as the ``thelma`` command."""

from thelma_py.tools.cli import main

raise SystemExit(main())
