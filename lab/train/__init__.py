"""Encoder training studies: held-out evaluation, GPU transfer packing and the device scripts."""
