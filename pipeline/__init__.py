"""tfx-audio pipeline: configuration, `create_pipeline(...)` and the thin runners."""
import os

# transformers' TF models, TFT and TFMA need Keras 2 (tf_keras); this must be set
# before TensorFlow is first imported, so every entry point imports this package first.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
