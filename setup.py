"""tfx-audio: a TFX pipeline that turns folders of WAV audio into a pushed model.

`setup.py` declares the supported ranges; `requirements.lock` pins the exact,
hash-checked set that `scripts/setup.sh` installs without resolving.
"""
from setuptools import find_packages, setup

setup(
    name="tfx-audio",
    version="0.1.0",
    description="TFX pipeline for noisy speech: WAV ExampleGen, Transform, GradientTape Trainer, TFMA, Pusher",
    python_requires=">=3.10,<3.11",
    packages=find_packages(include=["pipeline", "pipeline.*", "components", "components.*"]),
    package_data={"pipeline": ["configs/*.yaml"], "components": ["models/pretrained/*"]},
    install_requires=[
        "tfx[kfp]==1.16.0",
        "tensorflow>=2.16,<2.17",
        "tf-keras>=2.16,<2.17",
        "tensorflow-io>=0.37,<0.38",
        "transformers>=4.40,<5",
        "apache-beam[gcp]>=2.59,<3",
        "dill",
        "soundfile>=0.12",
        "soxr>=0.3",
        "scipy>=1.10",
        "pyroomacoustics>=0.7",  # simulated room impulse responses (trainer.augment)
        "pyyaml>=6",
        "webrtcvad-wheels>=2.0.11",
        "pydantic>=2,<3",
        "tqdm>=4",
        "matplotlib>=3.8",
        "jinja2>=3",
        "pesq>=0.0.4",  # the Evaluator's PESQ (components/evaluation/tfma_quality.py)
        "pystoi>=0.4",  # and STOI
        "cython>=3",  # builds pesq, which the index has only as a source distribution (scripts/install.sh)
    ],
    entry_points={"console_scripts": ["tfx-audio=pipeline.cli:console"]},
    extras_require={
        "test": ["pytest>=8", "pytest-timeout", "pytest-xdist", "ruff"],
        "bench": ["noisereduce>=3", "pyrnnoise>=0.4", "fast-bss-eval>=0.1", "speechmos", "onnxruntime",
                  "onnx"],  # onnx: reads the published DTLN (components/models/published.py)
    },
)
