"""Clients of an env without verifiers' loop: a typed `Connection`, and the interactive player.

`client.connect` opens a typed session on a server (`Connection`); `play` lets a person
play a package's episode at a terminal (`python -m openenvgen_runtime.client.play`).

Layers: client, play
"""
