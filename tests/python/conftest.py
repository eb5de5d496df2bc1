"""tests/python/conftest.py — makes the helpers beside this file (doc_examples.py)
importable from every test folder."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Property tests draw fresh random examples on a developer's machine (to find new bugs) but
# a fixed sequence in CI (so a run's verdict depends on the code, not the seed), and never
# write an example database into the checkout.
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    _hypothesis_settings.register_profile("dev", database=None, print_blob=True)
    _hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")
except ImportError:  # the property tests skip themselves without Hypothesis
    pass
