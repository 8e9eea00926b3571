"""`mlrig trace`: exact memory of a Hugging Face model's real training or generation code, traced on
fake tensors (PyTorch `FakeTensorMode`) without a GPU. torch is imported only inside `engine` and
`gpu_emulation`, when a trace runs; `api.trace_plan` is the entry point."""
