"""A file's SHA-256, read in 1 MiB blocks: the pins of the fetched packages and jars
(pipeline/datagen/real.py, pipeline/job_servers.py, components/models/published.py). Written here: Python 3.10 has no
`hashlib.file_digest` (3.11)."""
from __future__ import annotations

import hashlib

_BLOCK = 1 << 20


def sha256_file(path: str) -> str:
    """The hex SHA-256 of the file at `path`, in memory bounded by one block."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
