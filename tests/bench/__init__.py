"""Tests of the benchmark runner's page (bench/run.py), without running a benchmark."""
