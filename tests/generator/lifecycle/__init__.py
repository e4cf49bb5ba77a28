"""Tests of `openenvgen.lifecycle`: what happens to a package after generation (`check`,
`regen`, `publish`)."""
