"""Localizer studies: channel settings, costs and ablations of the learned localizer."""
