"""Tests of `openenvgen_runtime`, the base of every generated package, against real OpenEnv
servers on loopback (`openenvgen_testsupport`): launching, pools and fleets, drift, tasks,
observations, seats."""
