"""Serving: the exported SavedModel and its signatures (`export`), and a pushed model run over whole
recordings of any length in bounded memory (`recording`)."""
