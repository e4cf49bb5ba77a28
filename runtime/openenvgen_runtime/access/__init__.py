"""Access to env servers beyond loopback: what a run presents, and the gate a replica runs.

`origins.ServerAccess` holds the headers each server needs (a Swarm launch's secret, a
`base_url` fleet's headers) and the TLS trust, and adds them to every HTTP request the
runtime makes (an `httpx.Auth`); `relay` is every loopback relay a run's clients reach a
server through (OpenEnv's client takes neither headers nor a TLS context nor a Unix
socket), each admitting only the run that holds its URL's token; `incontainer` is the one
program a run's containers start first: the gate a Swarm replica runs in front of its server
to require the secret, the router that is the one way in to replicas kept on a network of
their own, and the shim of a network-less sandboxed container.

Layers: incontainer, origins < relay
"""
