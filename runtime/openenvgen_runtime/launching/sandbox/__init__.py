"""The sandbox a container launch runs model-written code in, and every container's way in.

`hardening` decides whether a run is sandboxed and how (`Sandbox`: limits, network, runc or
gVisor's runsc) and spells it as `docker run` / `docker service create` arguments, one
function for both modes; every `docker run` container, sandboxed or not, starts
`access.socket_shim` first (the image's own python, standard library only): it runs
the image's command and relays a Unix socket in a bind-mounted folder to its port, which
answers nothing else; `relay` is the host's end of that socket, a loopback URL that only the
run holds (a token in its path), so OpenEnv's client reaches the server by URL as before (a
Swarm replica without network is reached through one too, tunnelled by its launch's router,
and a UV server on its Unix socket); `shim` puts the three together for one `docker run`, its
socket folder made by `folders`, which names it by the run's owner so that the run's reaper
finds it.

Layers: folders < hardening, relay < shim
"""
