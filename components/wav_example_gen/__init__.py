"""WAV ExampleGen: a FileBasedExampleGen whose Beam executor reads audio files."""
from components.wav_example_gen.component import WavExampleGen

__all__ = ["WavExampleGen"]
