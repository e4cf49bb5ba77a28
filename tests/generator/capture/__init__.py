"""Tests of `openenvgen.capture`: capturing upstream envs into recordings and catalog snapshots,
and the generated models' validation agreeing with the servers' own."""
