"""Core query stages: intent, fusion, localization, the learned localizer, context, query encoding, prefetch."""
