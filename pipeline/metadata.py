"""The ML Metadata connection of local runs: SQLite (default) or MySQL / MariaDB."""
from __future__ import annotations

import os

from ml_metadata.proto import metadata_store_pb2
from tfx.orchestration import metadata

from components.config import PipelineConfig


def connection_config(config: PipelineConfig) -> metadata_store_pb2.ConnectionConfig:
    settings = config.metadata
    if settings.backend == "sqlite":
        return metadata.sqlite_metadata_connection_config(config.metadata_sqlite)
    password = os.environ.get(settings.password_env)
    if password is None:
        raise ValueError(f"metadata.backend is mysql but {settings.password_env} is not set: export the "
                         f"MySQL password of user {settings.user!r} in it (metadata.password_env names it)")
    return metadata.mysql_metadata_connection_config(
        host=settings.host, port=settings.port, database=settings.database, username=settings.user,
        password=password)


def describe(connection: metadata_store_pb2.ConnectionConfig) -> str:
    """Where the store is, for messages (never the password)."""
    if connection.HasField("mysql"):
        mysql = connection.mysql
        return f"mysql://{mysql.user}@{mysql.host}:{mysql.port}/{mysql.database}"
    return connection.sqlite.filename_uri
