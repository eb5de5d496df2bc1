"""tests/python/reliability/conftest.py — makes reliability_helpers.py importable."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
