"""The learned localizer's LightGBM fit (`fit.py`): `semantica train-localizer` and the lab's studies learn
with it."""
