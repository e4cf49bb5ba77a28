"""The fleet: the pool of running servers every episode of a run shares, watched back to health.

`pool.ServerPool` launches or adopts the servers and hands out sessions; `fleet.Fleet`
holds them; `health` tells a failed server from a failed episode; `watch` probes down
servers back and replaces dead ones.

Layers: fleet, health < watch < pool
"""
