"""tfx-audio components, one subpackage per pipeline stage (ingest, validation, transform, training,
models, evaluation, serving) over `audio`; `config` and `features` are the settings and the keys
every stage shares, `progress_lines` the progress lines they log."""
import os

# One Keras (tf_keras) everywhere; must precede the first TensorFlow import.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

# Every process that runs a Beam step of this pipeline imports this package (the local runner, a Kubeflow
# component's container): the runner's data channel must not drop elements (components/beam_fixes.py).
from components import beam_fixes  # noqa: E402

beam_fixes.apply()
