"""Data: the generated keyword demo (`keywords`), calls demo (`calls`) and held-out corpus (`heldout`); the
real recordings fetched from Debian packages (`real`); a smaller copy of a corpus (`sample`). Each runs as
`python -m pipeline.datagen.<name>`."""
