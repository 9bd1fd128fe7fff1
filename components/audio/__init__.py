"""Audio: reading WAV files window by window, resampling, per-window statistics, mixing at an SNR,
telephone channels, and SNR / SI-SNR in numpy. Used by every stage; imports no other stage."""
