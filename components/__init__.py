"""tfx-audio components, one subpackage per pipeline stage (ingest, validation, transform, training,
models, evaluation, serving) over `audio`; `config` and `features` are the settings and the keys
every stage shares, `progress_lines` the progress lines they log."""
import os

# One Keras (tf_keras) everywhere; must precede the first TensorFlow import.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
