"""Access to env servers beyond loopback: what a run presents, and the gate a replica runs.

Layer 0 (the bottom, beside `config`, `mcp_models` and `turn`): may import nothing of the runtime.

`origins.ServerAccess` holds the headers each server needs (a Swarm launch's secret, a
`base_url` fleet's headers) and the TLS trust, and adds them to every HTTP request the
runtime makes (an `httpx.Auth`); `relay` is every loopback relay a run's clients reach a
server through (OpenEnv's client takes neither headers nor a TLS context nor a Unix
socket), each admitting only the run that holds its URL's token;
`gate` is the program a Swarm replica runs in front of its server to require the secret;
`router` is the program that is the one way in to replicas kept on a network of their own.

Layers: gate, origins, router < relay
"""
