"""Tests of `openenvgen.catalog`: the embedded catalog (`list`), capturing upstream envs into
recordings, and the generated models' validation agreeing with the servers' own."""
