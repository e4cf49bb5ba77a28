"""Access to env servers beyond loopback: what a run presents, and the gate a replica runs.

`origins.ServerAccess` holds the headers each server needs (a Swarm launch's secret, a
`base_url` fleet's headers) and the TLS trust, and adds them to every HTTP request the
runtime makes (an `httpx.Auth`); `relay` carries OpenEnv's WebSocket sessions (whose
client takes neither headers nor a TLS context) through a loopback relay that adds them;
`gate` is the program a Swarm replica runs in front of its server to require the secret;
`router` is the program that is the one way in to replicas kept on a network of their own.

Layers: gate, origins, router < relay
"""
