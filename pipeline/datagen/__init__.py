"""Data generators: the keyword demo (`keywords`), the calls demo (`calls`) and the held-out corpus
(`heldout`), each runnable as `python -m pipeline.datagen.<name>`."""
