"""`openenv-gen doctor`'s report: its versioned JSON document and how it is shown.

Layer 6 of the generator (errors < schema_checks < spec < sources < catalog < generation <
lifecycle, doctor < commands < cli): may import openenvgen.errors and
openenvgen.generation.layout (where the templates are); never lifecycle, commands or cli.

- `model`: `DoctorReport`, the document (`--json` prints it), schema version 1; pydantic only;
- `plots`: the page's plots as geometry (histograms, the capacity curve), pure;
- `report`: the terminal summary, `--json` text, the self-contained HTML page
  (templates/doctor/), and the exit status a report calls for.

Layers: model < plots < report
"""
