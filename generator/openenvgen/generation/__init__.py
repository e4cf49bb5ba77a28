"""Make a package: spec → codegen → render (pure) → atomic write with a lock; read one back from disk.

Layers: layout, python_format, shared_models < codegen < render, marked < on_disk, scaffold, writer,
    report < package
"""
