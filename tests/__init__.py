"""openenv-gen's test suite: one folder per distribution and layer it tests (schemas/, servers/,
generator/{build,catalog,lifecycle}/, runtime/), then e2e/ (whole workflows across them) and
project/ (the repository itself: compatibility, docs, layering, the test tooling).

Test modules import the code under test and `openenvgen_testsupport` (tests/support), never
each other; shared fixtures are in conftest.py, and data in fixtures/, golden/, hostile/ and
broken_specs/ (found through `openenvgen_testsupport.paths`).
"""
