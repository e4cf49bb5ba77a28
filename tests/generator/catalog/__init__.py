"""Tests of `openenvgen.catalog`: the embedded catalog, its entries and seed verdicts (`list`)."""
