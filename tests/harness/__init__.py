"""Test helpers shared by pytest and the MicroPython runner (no pytest import here)."""
