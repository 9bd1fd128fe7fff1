"""tfx-audio components: the WAV ExampleGen and the module code TFX loads."""
import os

# One Keras (tf_keras) everywhere; must precede the first TensorFlow import.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
