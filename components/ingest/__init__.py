"""WAV ExampleGen: a FileBasedExampleGen whose Beam executor reads audio files.

`WavExampleGen` (the component, which imports `tfx.v1`) is loaded on first use, not with
the package: Beam's workers import this package to unpickle the executor's DoFns, and
`tfx.v1` (every TFX component and extension, Vertex AI's client among them) cost each
worker about 11 s of start-up.
"""
__all__ = ["WavExampleGen"]


def __getattr__(name: str):
    if name == "WavExampleGen":
        from components.ingest.component import WavExampleGen
        return WavExampleGen
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
