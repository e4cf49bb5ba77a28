"""Tests of the generator (`openenvgen`), by its layers: build/, catalog/, lifecycle/; the CLI's
error handling is here. Most run the installed `openenv-gen` as a user does
(`openenvgen_testsupport.generating.gen`)."""
