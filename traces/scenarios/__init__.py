"""Scripted conversations that record the corpus (``xspec record-corpus``)."""
