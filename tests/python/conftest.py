"""tests/python/conftest.py — makes the helpers beside this file (doc_examples.py)
importable from every test folder."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
