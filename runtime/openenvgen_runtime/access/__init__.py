"""Access to env servers beyond loopback: what a run presents, and the gate a replica runs.

`origins.ServerAccess` holds the headers each server needs (a Swarm launch's secret, a
`base_url` fleet's headers) and the TLS trust, and adds them to every HTTP request the
runtime makes (an `httpx.Auth`); `relay` is every loopback relay a run's clients reach a
server through (OpenEnv's client takes neither headers nor a TLS context nor a Unix
socket), each admitting only the run that holds its URL's token (`tokens`, which also
hides tokens from what the runtime logs and raises); `incontainer` is the program a run's
Swarm containers start first: the gate a replica runs in front of its server to require the
secret, and the router that is the one way in to replicas kept on a network of their own;
`socket_shim`, beside it, is the one every `docker run` container is reached through.

Layers: incontainer, origins, tokens < relay, socket_shim
"""
