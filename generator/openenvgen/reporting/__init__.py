"""`openenv-gen doctor`'s report as it is shown: terminal summary, `--json`, HTML page.

The document itself, `DoctorReport` (what `--json` prints, schema version 1), is
`openenvgen_schemas.doctor_report`: the runtime's doctor (`python -m openenvgen_runtime.doctor`)
writes it, this package reads and draws it.

- `plots`: the page's plots as geometry (histograms, the capacity curve), pure;
- `report`: the terminal summary, `--json` text, the self-contained HTML page
  (templates/doctor/), and the exit status a report calls for.

Layers: plots < report
"""
