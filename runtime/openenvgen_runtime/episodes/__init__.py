"""Episodes for verifiers: the task list, the taskset and its seat, and the loop that plays one episode.

`taskset` is verifiers' face of a generated package (`AdapterTaskset`, `AdapterEnv`);
`tasks` reads its task list; `seat` is the bundled in-process player seat; `episode` plays
one task on a pooled server, calling back into the taskset through `episode.EpisodeTaskset`.

Layers: episode, seat, tasks < taskset
"""
