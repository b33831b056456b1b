"""Runnable flow recipes, installed as :mod:`thelma_py.cases` (``thelma run cases/NAME.py``)."""
