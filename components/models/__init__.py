"""The Keras models the Trainer builds: the backbones and heads (`model`) and the denoiser front end
(`denoiser`)."""
