"""`python -m openenvgen.cli ARGS`: `openenv-gen ARGS` in this interpreter."""

from openenvgen.cli.main import main

main()
