"""Runs the pipeline locally with TFX's LocalDagRunner and SQLite ML Metadata.

    python -m pipeline.local_runner --config pipeline/configs/demo.yaml \
        [--set data.input_base=/path/to/audio] [--set trainer.epochs=3]

Ends by printing a summary read back from ML Metadata.
"""
import argparse
import os

import pipeline  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
from absl import logging
from tfx import v1 as tfx

from pipeline import summary
from components.config import load_config
from pipeline.pipeline import create_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None, help="YAML config; defaults when omitted")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one setting, e.g. --set trainer.epochs=3")
    args = parser.parse_args()
    logging.set_verbosity(logging.INFO)
    config = load_config(args.config, args.set)
    config.output_dir = os.path.abspath(config.output_dir)
    os.makedirs(config.output_dir, exist_ok=True)
    tfx.orchestration.LocalDagRunner().run(create_pipeline(
        config,
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            config.metadata_sqlite)))
    print(summary.latest_run(config.metadata_sqlite, config.name).text(), flush=True)


if __name__ == "__main__":
    main()
