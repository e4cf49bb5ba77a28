"""The doctor: whether a package's env is fit to train on, measured from the trainer's side.

Run as `python -m openenvgen_runtime.doctor PACKAGE_ID ...` (what `openenv-gen doctor` runs, in the
interpreter where the package and the runtime are installed). It writes a
`openenvgen_schemas.doctor_report.DoctorReport`; the generator renders it.

- `instances`: values a JSON schema allows, drawn at random within small bounds;
- `sessions`: one WebSocket session on one server (OpenEnv's public client), every request
  timed and bounded by a timeout;
- `policy`: schema-valid actions for the package (the catalog's example first, then drawn);
- `capacity`: concurrent sessions until `CAPACITY_REACHED`, and whether vanished clients'
  sessions are freed (`vanish`: the child process that vanishes);
- `rollouts`: episodes played and measured, and replays compared;
- `judge`: the measurements judged by the thresholds, as one report;
- `run`: one doctor run, from the package to the report (its command line).

Layers: instances, sessions < policy, capacity, vanish < rollouts < judge < run < __main__
"""
