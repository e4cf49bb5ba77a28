"""Tests of the repository itself: what users rely on stays put (compatibility), the docs
build and agree with the code, imports go down the layers, skips are loud, and the test
support servers work."""
