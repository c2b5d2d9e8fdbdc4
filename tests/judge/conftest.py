"""Fixtures shared by the judge tests (the warmed shared cache, `warm_root`, lives in tests/conftest.py: the
eval and service tests' servers read it too)."""
