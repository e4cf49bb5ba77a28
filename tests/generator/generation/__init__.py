"""Tests of `openenvgen.generation`: rendering packages from specs, byte for byte (the checked-in
generated/ packages), hostile schemas, and union actions."""
